"""Retries, written once: a call that is safe to repeat, tried again on the errors its caller
names, with exponential backoff and full jitter, capped (``RETRY_BASE_S``, ``RETRY_CAP_S``).

Every retry loop of a vendor boundary goes through :func:`retried` (tenacity underneath) or, where
the loop is over answers rather than errors (an HTTP status, a ``retry-after`` header), waits
:func:`backoff`. A create whose answer may have been lost passes ``adopt``: before each new
attempt it looks for what the lost one made, so a retry never makes a thing twice. Each retry is
logged on the ``praisonai`` logger at INFO, with the error that caused it.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from praisonai._limits import RETRY_BASE_S, RETRY_CAP_S

if TYPE_CHECKING:
    import tenacity

T = TypeVar("T")
log = logging.getLogger("praisonai.retry")


def backoff(attempt: int) -> float:
    """Seconds to wait before retry number ``attempt + 1`` (``attempt`` from 0): full jitter."""
    return random.uniform(0.0, min(RETRY_CAP_S, RETRY_BASE_S * 2**attempt))


async def retried(
    call: Callable[[], Awaitable[T]],
    *,
    retry_if: Callable[[BaseException], bool],
    attempts: int,
    what: str,
    adopt: Callable[[], Awaitable[T | None]] | None = None,
    wait_at_least: Callable[[BaseException], float] | None = None,
) -> T:
    """``await call()``, tried at most ``attempts`` times while it fails with an error
    ``retry_if`` accepts; the last error is raised as it is. ``adopt`` (for a create): before each
    retry, what the failed attempt made, returned instead when not ``None``. ``wait_at_least``:
    the least wait an error asks for (a ``retry-after``), when longer than the backoff. ``what``
    names the call in the log line."""
    import tenacity

    def wait(state: tenacity.RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome else None
        least = wait_at_least(error) if wait_at_least is not None and error is not None else 0.0
        return max(least, backoff(state.attempt_number - 1))

    retrying = tenacity.AsyncRetrying(
        stop=tenacity.stop_after_attempt(attempts),
        wait=wait,
        retry=tenacity.retry_if_exception(retry_if),
        reraise=True,
        before_sleep=lambda state: _said(what, state),
    )
    async for attempt in retrying:
        with attempt:
            if adopt is not None and attempt.retry_state.attempt_number > 1:
                found = await adopt()
                if found is not None:
                    return found
            return await call()
    raise AssertionError("unreachable: the last attempt returns or raises")


def _said(what: str, state: tenacity.RetryCallState) -> None:
    error = state.outcome.exception() if state.outcome else None
    wait = state.next_action.sleep if state.next_action else 0.0
    log.info("retrying %s in %.2fs (attempt %d failed: %s)", what, wait, state.attempt_number, error)
