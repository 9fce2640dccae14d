"""Bounds on what a model's API may do to a streamed reply, for both SDK adapters: how long it may
stay silent (:class:`Deadline`), how large one event may be (:func:`response_hook`), and what
becomes of data its protocol does not allow (:func:`malformed_data`).

Takes the HTTP library as a value (``httpx`` for openai, ``httpx2`` for anthropic), so that it
imports neither.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import anyio

from praisonai._errors import MalformedReplyError, PraisonAIError, RemoteTimeoutError
from praisonai._limits import MAX_REMOTE_EVENT_BYTES
from praisonai._retry import no_sdk_sleep_past_cap

T = TypeVar("T")

#: What the SDKs' parsers raise on data they cannot read: an event that is not JSON
#: (``JSONDecodeError``, a ``ValueError``), a field of the wrong type (``TypeError``,
#: ``AttributeError``, ``KeyError``, ``IndexError``), events out of order (``RuntimeError``,
#: anthropic's stream accumulator; ``AssertionError``, its final message when none started).
PARSE_ERRORS = (ValueError, TypeError, AttributeError, KeyError, IndexError, RuntimeError, AssertionError)


class Deadline:
    """``seconds`` of silence a streamed reply is allowed (``None``: no limit), for the remote
    ``where``: :meth:`wait` raises RemoteTimeoutError once that long passed since the request or
    since the last :meth:`moved` (a keep-alive does not call it)."""

    def __init__(self, seconds: float | None, where: str) -> None:
        self.seconds, self.where = seconds, where
        self._due = float("inf")
        self.moved()

    def moved(self) -> None:
        """The reply moved on: the next wait has ``seconds`` again."""
        if self.seconds is not None:
            self._due = anyio.current_time() + self.seconds

    async def wait(self, awaitable: Awaitable[T]) -> T:
        """``await awaitable``, cut at the deadline (the awaitable is cancelled)."""
        with anyio.CancelScope(deadline=self._due):
            return await awaitable
        raise RemoteTimeoutError(
            f"{self.where} sent nothing for {self.seconds:g} s (turn_timeout_s; keep-alives do not count)",
            op="model",
        )

    async def next(self, items: AsyncIterator[T]) -> tuple[bool, T | None]:
        """The next of ``items`` within the deadline: ``(True, item)``, or ``(False, None)`` at the end."""
        try:
            return True, await self.wait(items.__anext__())
        except StopAsyncIteration:
            return False, None


@contextmanager
def malformed_data(where: str) -> Iterator[None]:
    """Raise MalformedReplyError, one sentence naming ``where``, for a parse error of the SDK's
    stream reader or of ours (:data:`PARSE_ERRORS`); our own errors pass unchanged."""
    try:
        yield
    except PraisonAIError:
        raise
    except PARSE_ERRORS as exc:
        detail = " ".join(f"{type(exc).__name__}: {exc}".split())[:200]
        raise MalformedReplyError(
            f"{where} sent a reply its API does not allow ({detail})", op="model"
        ) from exc


def check_type(value: object, kind: type | tuple[type, ...], field: str) -> None:
    """A wrong type in a field we read is a parse error (see :func:`malformed_data`)."""
    if not isinstance(value, kind):
        raise TypeError(f"{field} is {type(value).__name__} {str(value)[:40]!r}")


def response_hook(http: Any, where: Callable[[], str]) -> Callable[[Any], Awaitable[None]]:
    """An ``httpx``/``httpx2`` response hook that caps each server-sent event of a streamed
    reply at :data:`MAX_REMOTE_EVENT_BYTES`, counted in the bytes as they arrive, so that an
    endless event is refused before the SDK's parser holds it (MalformedReplyError naming
    ``where()``), and keeps the SDK from sleeping through a ``retry-after`` past the cap
    (``_retry.no_sdk_sleep_past_cap``)."""

    class CappedStream(http.AsyncByteStream):  # type: ignore[misc]
        def __init__(self, inner: Any) -> None:
            self._inner, self._open, self._tail = inner, 0, b""

        async def __aiter__(self) -> AsyncIterator[bytes]:
            async for chunk in self._inner:
                self._count(chunk)
                yield chunk

        def _count(self, chunk: bytes) -> None:
            joined = self._tail + chunk
            ends = [(joined.find(s), joined.rfind(s), len(s)) for s in (b"\n\n", b"\r\r", b"\r\n\r\n")]
            found = [e for e in ends if e[0] >= 0]
            if found:  # the open event ends in this chunk; another may start after the last end
                self._open += min(first for first, _, _ in found) - len(self._tail)
                self._check()
                self._open = len(joined) - max(last + size for _, last, size in found)
            else:
                self._open += len(chunk)
            self._check()
            self._tail = joined[-3:]

        def _check(self) -> None:
            if self._open > MAX_REMOTE_EVENT_BYTES:
                raise MalformedReplyError(
                    f"{where()} sent a streamed event larger than {MAX_REMOTE_EVENT_BYTES >> 20} MiB; "
                    "it was refused unread",
                    op="model",
                )

        async def aclose(self) -> None:
            await self._inner.aclose()

    async def hook(response: Any) -> None:
        no_sdk_sleep_past_cap(response)
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            response.stream = CappedStream(response.stream)

    return hook
