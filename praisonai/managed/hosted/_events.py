"""The wire side of a hosted turn: the API's events as ours, events sent at most once, and a feed of
the session's events that survives a dropped stream.

- :func:`to_event`: a remote event becomes an :class:`Event` with the API's own id (``sevt_…``),
  so the store's upsert on the event id de-duplicates whatever arrives twice.
- :func:`send`: the SDK sends no idempotency key and retries 5xx by itself, which duplicates a
  message whose answer was lost. So we send with ``max_retries=0`` and, when the answer is lost
  (no answer, a 5xx), look for the events in the session's log before sending them again.
- :class:`Feed`: the live stream (opened before anything is sent: it has no replay); when it
  breaks, ends, or sends no event for its read deadline (keep-alive pings do not count), it is
  reopened and what was missed is listed with ``events.list`` from the last event seen (the
  overlap is dropped by id). Each event, streamed or listed, is checked (:mod:`._checks`): one
  that is not JSON, has a field of the wrong type, is of no Managed Agents type or is too large
  ends the turn (:class:`MalformedReplyError`, naming the API's base URL).
- :func:`request_usage`, :func:`counters`: a request's usage (added up) and the API's cumulative
  snapshot (which replaces the session's counters); :func:`retrieve`: the session at a turn's end.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import math
import re
import time
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import anyio

from praisonai import _retry
from praisonai._errors import (
    MalformedReplyError,
    ModelError,
    PraisonAIError,
    ProviderUnavailableError,
    RemoteTimeoutError,
)
from praisonai._limits import HOSTED_READ_DEADLINE_S
from praisonai.llm.types import Usage
from praisonai.managed.events import EPHEMERAL, Event, new_id
from praisonai.managed.hosted._checks import oversized, problem
from praisonai.managed.hosted._client import api_errors, at_most_once, transient
from praisonai.managed.hosted._guard import OversizedError

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic
    from anthropic.types.beta.sessions.beta_managed_agents_event_params import (
        BetaManagedAgentsEventParams,
    )

Raw = dict[str, Any]
#: Reopening a broken stream waits the shared backoff (``praisonai._retry``); after this many tries
#: in a row that bring nothing new, the turn gives up.
RECONNECTS: Final = 6
_PAGE: Final = 1000  # events.list's largest page


def dump(event: Any) -> Raw:
    """An SDK event as the API sent it: an unknown type parses as some other class, so only the
    fields that were set are taken (nothing lost, nothing added)."""
    value: Raw = event.model_dump(mode="json", exclude_unset=True, warnings=False)
    return value


def to_event(raw: Mapping[str, Any]) -> Event:
    """``raw`` as our Event: the same type and id, the rest as data, ``processed_at`` in epoch
    seconds (a delta has neither id nor time: it gets ours, it is never stored)."""
    data = {k: v for k, v in raw.items() if k not in ("type", "id", "processed_at")}
    at = raw.get("processed_at")
    return Event(str(raw["type"]), data, str(raw.get("id") or new_id()), epoch(at) if at else time.time())


def epoch(stamp: str) -> float:
    """An RFC 3339 time in epoch seconds (Python 3.10's parser wants an offset, not ``Z``, and 3 or 6
    digits of fraction)."""
    text = re.sub(r"[Zz]$", "+00:00", stamp)
    text = re.sub(r"\.(\d+)", lambda m: "." + (m.group(1) + "00000")[:6], text)
    return dt.datetime.fromisoformat(text).timestamp()


def moment(seconds: float) -> dt.datetime:
    """Epoch seconds back to the API's microsecond time (a float holds them exactly)."""
    return dt.datetime.fromtimestamp(round(seconds, 6), tz=dt.timezone.utc)


async def listed(
    client: AsyncAnthropic, session_id: str, since: float | None, types: Sequence[str] = ()
) -> list[Raw]:
    """The session's events processed at or after ``since`` (all when None), oldest first."""
    options: dict[str, Any] = {"limit": _PAGE}
    if since is not None:
        options["created_at_gte"] = moment(since)
    if types:
        options["types"] = list(types)
    with api_errors(f"listing the events of session {session_id}"):
        return [dump(e) async for e in client.beta.sessions.events.list(session_id, **options)]


async def send(
    client: AsyncAnthropic,
    session_id: str,
    events: Sequence[Raw],
    *,
    since: float | None,
    seen: set[str],
) -> list[Raw]:
    """Send ``events`` once; their echoes (with the API's ids). When an answer is lost, the log
    after ``since`` (the last event processed before sending) is searched for events not in
    ``seen`` that carry every field we sent: found, they were recorded and are not sent again."""
    params: list[BetaManagedAgentsEventParams] = [dict(e) for e in events]  # type: ignore[misc]

    async def post(once: AsyncAnthropic) -> list[Raw]:
        answer = await once.beta.sessions.events.send(session_id, events=params)
        return [dump(e) for e in answer.data or []]

    what = f"sending {', '.join(e['type'] for e in events)} to session {session_id}"
    return await at_most_once(
        client, what, post, lambda: _recorded(client, session_id, events, since=since, seen=seen)
    )


async def _recorded(
    client: AsyncAnthropic,
    session_id: str,
    events: Sequence[Raw],
    *,
    since: float | None,
    seen: set[str],
) -> list[Raw] | None:
    """The echoes of ``events`` if the log has them all, else None (send them again)."""
    logged = await listed(client, session_id, since, types=sorted({e["type"] for e in events}))
    found: list[Raw] = []
    for event in events:
        match = next(
            (r for r in logged if r.get("id") not in seen and r not in found and _carries(r, event)), None
        )
        if match is None:
            return None
        found.append(match)
    return found


def _carries(logged: Mapping[str, Any], sent: Mapping[str, Any]) -> bool:
    return all(logged.get(key) == value for key, value in sent.items())


def request_usage(model_usage: Mapping[str, Any]) -> Usage:
    """One model request's usage (``span.model_request_end.model_usage``)."""
    return Usage(
        int(model_usage.get("input_tokens") or 0),
        int(model_usage.get("output_tokens") or 0),
        1,
        int(model_usage.get("cache_read_input_tokens") or 0),
        int(model_usage.get("cache_creation_input_tokens") or 0),
    )


def counters(usage: Mapping[str, Any]) -> dict[str, int]:
    """The API's cumulative usage as the store's counters (its cache writes are split by lifetime)."""
    cache = usage.get("cache_creation") or {}
    return {
        "input_tokens": int(usage.get("input_tokens") or 0),
        "output_tokens": int(usage.get("output_tokens") or 0),
        "cache_read_input_tokens": int(usage.get("cache_read_input_tokens") or 0),
        "cache_creation_input_tokens": int(cache.get("ephemeral_5m_input_tokens") or 0)
        + int(cache.get("ephemeral_1h_input_tokens") or 0),
    }


async def retrieve(client: AsyncAnthropic, session_id: str) -> Raw | None:
    """The remote session, or None when the API does not answer (gone, refused, unreachable)."""
    try:
        with api_errors(f"retrieving session {session_id}"):
            return dump(await client.beta.sessions.retrieve(session_id))
    except PraisonAIError:
        return None


class MalformedEventError(MalformedReplyError):
    """A hosted event that breaks the API's contract; ``event_id`` is its id when it has one (the
    turn logs that id, so that a later catch-up passes over the event instead of failing again)."""

    def __init__(self, message: str, *, event_id: str | None) -> None:
        super().__init__(message, op="managed")
        self.event_id = event_id


class Feed:
    """The session's events for one turn, each once, in order (an async context manager: the stream
    opens on entry). ``seen`` holds the ids already handled (the log's, our own echoes) and grows;
    ``since`` is the last ``processed_at`` seen, where a catch-up listing starts.

    ``turn_timeout_s``: the longest the feed waits with nothing new (no event streamed or listed)
    before the turn ends (:class:`RemoteTimeoutError`); the stream is reopened after a fifth of it
    (at most :data:`HOSTED_READ_DEADLINE_S`) without an event. ``None``: reopened every
    :data:`HOSTED_READ_DEADLINE_S`, for as long as the caller reads."""

    def __init__(
        self,
        client: AsyncAnthropic,
        session_id: str,
        *,
        deltas: bool,
        seen: set[str],
        since: float | None,
        turn_timeout_s: float | None = None,
    ) -> None:
        self._client, self._sid, self._deltas = client, session_id, deltas
        self.seen, self.since = seen, since
        self._timeout = turn_timeout_s
        self._read_s = (
            HOSTED_READ_DEADLINE_S
            if turn_timeout_s is None
            else min(HOSTED_READ_DEADLINE_S, turn_timeout_s / 5)
        )
        self.remote = str(client.base_url).rstrip("/")
        self._stream: Any = None
        self._events: AsyncIterator[Any] | None = None
        self._reopened = 0

    async def __aenter__(self) -> Feed:
        await self._open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._close()

    async def events(self) -> AsyncGenerator[Raw, None]:
        """Every event not seen yet (deltas too, when asked for), for as long as the caller reads.
        A broken, ended or quiet stream is reopened (a broken one after a backoff), then the missed
        events are listed; ``ProviderUnavailableError`` after :data:`RECONNECTS` breaks in a row
        that brought nothing new, :class:`RemoteTimeoutError` once nothing new came for
        ``turn_timeout_s`` (a long quiet tool call outlives a few quiet streams)."""
        failures, quiet_since = 0, time.monotonic()
        while True:
            raw, broken = await self._next()
            if raw is not None:
                failures = 0
                if self.fresh(raw):
                    yield raw
                    quiet_since = time.monotonic()
                continue
            self._check_quiet(quiet_since)
            if broken:
                failures += 1
                if failures > RECONNECTS:
                    raise ProviderUnavailableError(
                        f"session {self._sid}: the event stream of the Anthropic API at {self.remote} "
                        f"broke {RECONNECTS} times in a row",
                        op="managed",
                    )
                await anyio.sleep(_retry.backoff(failures - 1))
            recovered: list[Raw] = []
            with anyio.move_on_after(self._left(quiet_since)):  # a hung listing is bounded too
                recovered = await self._recover()
            for raw in recovered:
                if self.fresh(raw):
                    failures = 0
                    yield raw
                    quiet_since = time.monotonic()
            self._check_quiet(quiet_since)

    def _left(self, since: float) -> float:
        """Seconds left before the quiet since ``since`` passes ``turn_timeout_s`` (inf: none)."""
        return math.inf if self._timeout is None else max(0.0, self._timeout - (time.monotonic() - since))

    def _check_quiet(self, since: float) -> None:
        quiet = time.monotonic() - since
        if self._timeout is not None and quiet >= self._timeout:
            raise RemoteTimeoutError(
                f"session {self._sid}: the Anthropic API at {self.remote} sent no new event for "
                f"{quiet:.1f} s, past turn_timeout_s ({self._timeout:g} s; its stream was reopened "
                f"{self._reopened} times and the missed events listed)",
                op="managed",
            )

    async def missed(self) -> list[Raw]:
        """The events logged remotely after ``since`` that were not seen (a catch-up)."""
        return [raw for raw in await self._listed() if self.fresh(raw)]

    def fresh(self, raw: Raw) -> bool:
        """Not seen yet (deltas have no id: always fresh); marks it seen."""
        if raw.get("type") in EPHEMERAL:
            return True
        ident = raw.get("id")
        if ident in self.seen:
            return False
        if ident:
            self.seen.add(str(ident))
        if raw.get("processed_at"):
            self.since = max(self.since or 0.0, epoch(str(raw["processed_at"])))
        return True

    def malformed(self, what: str, raw: Mapping[str, Any] | None = None) -> MalformedEventError:
        """The error for an event that breaks the API's contract."""
        ident = raw.get("id") if raw is not None else None
        return MalformedEventError(
            f"session {self._sid}: the Anthropic API at {self.remote} sent {what}",
            event_id=ident if isinstance(ident, str) else None,
        )

    def _checked(self, raw: Raw) -> Raw:
        if raw.get("id") in self.seen:
            return raw  # handled already (a malformed one was reported and logged by its id)
        wrong = problem(raw) or oversized(raw)
        if wrong is not None:
            raise self.malformed(wrong, raw)
        return raw

    async def _next(self) -> tuple[Raw | None, bool]:
        """The stream's next event, or ``(None, broken)``: None when it ended, broke (``broken``) or
        sent no event for the read deadline."""
        if self._events is None:
            return None, True
        try:
            with api_errors(f"streaming session {self._sid}"), anyio.move_on_after(self._read_s):
                try:
                    event = await self._events.__anext__()
                except StopAsyncIteration:
                    return None, True
                except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                    raise self.malformed(f"an event that is not JSON ({exc})") from exc
                return self._checked(dump(event)), False
            return None, False  # quiet: pings at most
        except OversizedError as exc:  # refused as it arrived (api_errors unwraps it from the SDK's)
            raise self.malformed(str(exc).partition(" sent ")[2], {"id": exc.event_id}) from exc
        except (ModelError, ProviderUnavailableError) as exc:
            if transient(exc):
                return None, True
            raise

    async def _recover(self) -> list[Raw]:
        """Reopen the stream, then list what was missed meanwhile; [] when either failed, with the
        stream closed (so the next read tries again: what was missed must not be skipped)."""
        await self._close()
        self._reopened += 1
        try:
            await self._open()
            return await self._listed()
        except (ModelError, ProviderUnavailableError) as exc:
            await self._close()
            if transient(exc):
                return []
            raise

    async def _listed(self) -> list[Raw]:
        return [self._checked(raw) for raw in await listed(self._client, self._sid, self.since)]

    async def _open(self) -> None:
        """Open the stream (uncompressed: its frames are counted as they come, see ``_guard``);
        left closed when the API gives no answer within the read deadline."""
        options: dict[str, Any] = {"event_deltas": ["agent.message"]} if self._deltas else {}
        with api_errors(f"streaming session {self._sid}"), anyio.move_on_after(self._read_s):
            self._stream = await self._client.beta.sessions.events.stream(
                self._sid, extra_headers={"Accept-Encoding": "identity"}, **options
            )
        if self._stream is not None:
            self._events = self._stream.__aiter__()

    async def _close(self) -> None:
        stream, self._stream, self._events = self._stream, None, None
        if stream is not None:
            with contextlib.suppress(Exception):  # a broken connection may fail to close cleanly
                await stream.close()
