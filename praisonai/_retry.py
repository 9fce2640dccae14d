"""Retries, written once: a call that is safe to repeat, tried again on the errors its caller
names, with exponential backoff and full jitter, capped (``RETRY_BASE_S``, ``RETRY_CAP_S``).

Every retry loop of a vendor boundary goes through :func:`retried` (tenacity underneath) or, where
the loop is over answers rather than errors (an HTTP status, a ``retry-after`` header), waits
:func:`backoff`. A create whose answer may have been lost passes ``adopt``: before each new
attempt it looks for what the lost one made, so a retry never makes a thing twice. Each retry is
logged on the ``praisonai`` logger at INFO, with the error that caused it.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, TypeVar

from praisonai._limits import RETRY_AFTER_CAP_S, RETRY_BASE_S, RETRY_CAP_S

if TYPE_CHECKING:
    import tenacity

T = TypeVar("T")
log = logging.getLogger("praisonai.retry")


#: The statuses that ask a client to wait: rate limited, overloaded (Anthropic).
LIMITED: Final = (429, 529)


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds an answer asks to wait: ``retry-after-ms``, else ``retry-after`` (seconds or an
    HTTP date); None when it says nothing usable."""
    try:
        if (ms := headers.get("retry-after-ms")) is not None:
            return max(0.0, float(ms) / 1000)
        value = headers.get("retry-after")
        if value is None:
            return None
        try:
            return max(0.0, float(value))
        except ValueError:
            date = email.utils.parsedate_to_datetime(value)
            return max(0.0, date.timestamp() - time.time())
    except (TypeError, ValueError, OverflowError):
        return None


def no_sdk_sleep_past_cap(response: Any) -> None:
    """For an httpx response hook of the openai and anthropic SDKs, which sleep whatever a 429's or
    529's ``retry-after`` says (an hour, if it says an hour): past ``RETRY_AFTER_CAP_S`` the answer
    is marked ``x-should-retry: false``, the SDKs' own header, so they raise at once and the error
    says when to retry; within the cap they wait as asked."""
    if response.status_code in LIMITED:
        wait = retry_after(response.headers)
        if wait is not None and wait > RETRY_AFTER_CAP_S:
            response.headers["x-should-retry"] = "false"


def when(seconds: float) -> str:
    """The wall-clock time ``seconds`` from now, as ``15:04:05 UTC`` (with the date past a day)."""
    moment = dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=min(seconds, 10 * 365 * 86400))
    return moment.strftime("%H:%M:%S UTC" if seconds < 86400 else "%Y-%m-%d %H:%M:%S UTC")


def asked_to_wait(headers: Mapping[str, str]) -> str:
    """How a limited answer's wait reads in an error: what it asked, and when to try again."""
    wait = retry_after(headers)
    if wait is None:
        return "retry in a minute"
    longer = f", longer than praisonai waits ({RETRY_AFTER_CAP_S:g} s)" if wait > RETRY_AFTER_CAP_S else ""
    return f"it asks to retry after {wait:g} s{longer}: try again at {when(wait)}"


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
