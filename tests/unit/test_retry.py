"""The one retry helper: what it retries, how often, and what a lost create's retry adopts."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio
import pytest

from praisonai import _retry
from praisonai._errors import ProviderUnavailableError


@pytest.fixture(autouse=True)
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_retry, "RETRY_BASE_S", 0.001)


def _flaky(failures: list[BaseException], calls: list[int]) -> Callable[[], Awaitable[str]]:
    async def call() -> str:
        calls.append(1)
        if failures:
            raise failures.pop(0)
        return "done"

    return call


def _unavailable(exc: BaseException) -> bool:
    return isinstance(exc, ProviderUnavailableError)


def test_retryable_errors_are_retried_until_it_succeeds() -> None:
    calls: list[int] = []
    call = _flaky([ProviderUnavailableError("a"), ProviderUnavailableError("b")], calls)
    got = anyio.run(lambda: _retry.retried(call, retry_if=_unavailable, attempts=3, what="x"))
    assert (got, len(calls)) == ("done", 3)


def test_other_errors_and_the_last_attempts_are_raised_as_they_are() -> None:
    calls: list[int] = []
    call = _flaky([ValueError("no")], calls)
    with pytest.raises(ValueError, match="no"):
        anyio.run(lambda: _retry.retried(call, retry_if=_unavailable, attempts=3, what="x"))
    assert len(calls) == 1
    call = _flaky([ProviderUnavailableError(str(n)) for n in range(5)], calls)
    with pytest.raises(ProviderUnavailableError, match=r"^1$"):
        anyio.run(lambda: _retry.retried(call, retry_if=_unavailable, attempts=2, what="x"))


def test_a_retry_adopts_what_the_failed_attempt_made() -> None:
    calls: list[int] = []
    call = _flaky([ProviderUnavailableError("lost answer")], calls)

    async def made() -> str:
        return "made by the lost attempt"

    got = anyio.run(lambda: _retry.retried(call, retry_if=_unavailable, attempts=3, what="x", adopt=made))
    assert (got, len(calls)) == ("made by the lost attempt", 1)


def test_backoff_is_full_jitter_under_a_growing_capped_ceiling() -> None:
    waits = [_retry.backoff(n) for n in range(12) for _ in range(20)]
    assert all(0 <= w <= _retry.RETRY_CAP_S for w in waits)
    assert len({round(w, 6) for w in waits}) > 100  # random, not one schedule for every client
