"""What every HTTP answer of the Managed Agents API passes before the SDK reads it (an httpx
``response`` event hook on the client :func:`._client.make_client` makes).

- Size: an SSE frame longer than ``MAX_REMOTE_EVENT_BYTES``, or any other answer longer than
  ``MAX_REMOTE_ANSWER_BYTES``, raises :class:`MalformedReplyError` while its bytes arrive, so a
  10 MB (or endless) event is never held whole. The stream is asked for without compression
  (``identity``, see ``_events``), so the bytes counted are the bytes parsed.
- Retries: no sleep past ``RETRY_AFTER_CAP_S`` (``_retry.no_sdk_sleep_past_cap``).

Also :func:`origin`, the API's base URL as a request saw it, for the error messages.
"""

from __future__ import annotations

import re
import sys
from collections.abc import AsyncIterator
from typing import Any, Final

from praisonai._errors import MalformedReplyError
from praisonai._limits import MAX_REMOTE_ANSWER_BYTES, MAX_REMOTE_EVENT_BYTES
from praisonai._retry import no_sdk_sleep_past_cap

#: The start of a frame kept to find its event's id in, when the frame is refused.
_HEAD: Final = 4096
_ID: Final = re.compile(rb'"id"\s*:\s*"([A-Za-z0-9_]{1,128})"')


class OversizedError(MalformedReplyError):
    """An answer or an SSE frame past its bound; ``event_id``: the frame's event id, when its
    first bytes name one (so the turn can pass over that event when the log lists it)."""

    def __init__(self, message: str, *, event_id: str | None) -> None:
        super().__init__(message, op="managed")
        self.event_id = event_id


_FRAME_ENDS: Final = (b"\n\n", b"\r\r", b"\r\n\r\n")


async def guard(response: Any) -> None:
    """The hook: bound the answer's body, and stop the SDK sleeping past the cap."""
    no_sdk_sleep_past_cap(response)
    sse = response.headers.get("content-type", "").startswith("text/event-stream")
    response.stream = _bounded(response, sse=sse)


def _bounded(response: Any, *, sse: bool) -> Any:
    """``response.stream`` wrapped to count bytes: per SSE frame, else per answer."""
    inner, limit = response.stream, MAX_REMOTE_EVENT_BYTES if sse else MAX_REMOTE_ANSWER_BYTES
    http = sys.modules[type(response).__module__.partition(".")[0]]  # httpx or httpx2: the SDK's

    class Bounded(http.AsyncByteStream):  # type: ignore[misc,name-defined]
        async def __aiter__(self) -> AsyncIterator[bytes]:
            pending, tail, head = 0, b"", b""  # head: the current frame's start, for its id
            async for chunk in inner:
                if sse:
                    window = tail + chunk
                    end = max(
                        window.rfind(mark) + len(mark) if mark in window else -1 for mark in _FRAME_ENDS
                    )
                    pending = len(window) - end if end >= 0 else pending + len(chunk)
                    head = window[max(end, 0) :][:_HEAD] if end >= 0 else (head + chunk)[:_HEAD]
                    tail = window[-3:]
                else:
                    pending += len(chunk)
                if pending > limit:
                    what = "an event" if sse else "an answer"
                    found = _ID.search(head) if sse else None
                    raise OversizedError(
                        f"the Anthropic API at {origin(response)} sent {what} larger than "
                        f"{limit / 2**20:g} MiB (the most praisonai takes)",
                        event_id=found.group(1).decode() if found else None,
                    )
                yield chunk

        async def aclose(self) -> None:
            await inner.aclose()

    return Bounded()


def origin(source: Any) -> str:
    """The base URL (scheme, host, port) of the request behind ``source`` (an SDK or httpx error,
    or a response); ``the API`` when it has none."""
    try:
        url = source.request.url
    except (AttributeError, RuntimeError):  # httpx raises RuntimeError for a request never set
        return "(unknown address)"
    return f"{url.scheme}://{url.netloc.decode() if isinstance(url.netloc, bytes) else url.netloc}"
