"""One session while it lives in the fake: its JSON, its event log, its open streams, its usage and
the worker thread that plays its script.

Every event gets an id (``sevt_…``) and a ``processed_at`` when recorded and goes to the log and to
every open stream; ``event_start`` / ``event_delta`` previews go only to the streams that asked for
that event type's deltas, and never to the log. A stream is live only: it sees what is recorded
after it opened, nothing before.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Sequence

from fakes.managed_agents._script import RELEASE, ScriptedAgent, Step
from fakes.managed_agents._wire import ApiError, Clock, Ids, Json, sse_frame

#: The types a client may send (``POST /v1/sessions/{id}/events``).
SENDABLE = frozenset(
    {
        "user.message",
        "user.interrupt",
        "user.tool_confirmation",
        "user.custom_tool_result",
        "user.tool_result",
        "user.define_outcome",
        "system.message",
    }
)
#: What each answer must name, and the event type it must name.
_ANSWERS = {
    "user.custom_tool_result": ("custom_tool_use_id", ("agent.custom_tool_use",)),
    "user.tool_confirmation": ("tool_use_id", ("agent.tool_use", "agent.mcp_tool_use")),
    "user.tool_result": ("tool_use_id", ("agent.tool_use",)),
}
_STATUS = {
    "session.status_running": "running",
    "session.status_idle": "idle",
    "session.status_rescheduled": "rescheduling",
    "session.status_terminated": "terminated",
}


class Stream:
    """One open ``events/stream`` connection: the frames waiting to be written (None ends it)."""

    def __init__(self, deltas: frozenset[str], drop_after: int | None, stall: str = "drop") -> None:
        self.frames: queue.Queue[bytes | None] = queue.Queue()
        self.deltas = deltas
        #: After writing this many frames (None: never) the stream ``stall``s: ``drop`` closes the
        #: connection abruptly; ``pings`` sends only keep-alive pings from then on; ``silence``
        #: sends nothing more, the connection left open.
        self.drop_after = drop_after
        self.stall = stall


class LiveSession:
    """A session and its scripted agent. All state is read and changed under the fake's ``lock``, which
    is notified on every recorded event."""

    def __init__(
        self, obj: Json, steps: Sequence[Step], ids: Ids, clock: Clock, lock: threading.Condition
    ) -> None:
        self.obj = obj
        self.log: list[Json] = []
        self.streams: list[Stream] = []
        self._ids, self._clock, self._lock = ids, clock, lock
        self._inbox: queue.Queue[list[Json] | None] = queue.Queue()
        self._totals = {
            "input_tokens": 0,
            "output_tokens": 0,
            "cache_read_input_tokens": 0,
            "cache_creation_input_tokens": 0,
        }
        self._overrides: Json = {}
        self._closed = False
        self._agent = ScriptedAgent(self, steps)
        self._thread = threading.Thread(target=self._play, daemon=True, name=f"managed-fake-{obj['id']}")

    # ---- what the server calls -------------------------------------------------------------------

    def send(self, events: list[Json]) -> list[Json]:
        """Record sent events (each echoed with its id) and hand them to the agent as one batch."""
        if self.obj["archived_at"] is not None:
            raise ApiError(409, f"session {self.obj['id']!r} is archived")
        if self.obj["status"] == "terminated":
            raise ApiError(409, f"session {self.obj['id']!r} is terminated")
        for event in events:
            self._check(event)
        echoed = [self.emit(dict(e)) for e in events]
        self._inbox.put(echoed)
        if not self._thread.is_alive() and self._thread.ident is None:
            self._thread.start()
        return echoed

    def set_script(self, steps: Sequence[Step]) -> None:
        """Replace the script; only before the first event is sent."""
        if self._thread.ident is not None:
            raise RuntimeError(f"session {self.obj['id']} already started its script")
        self._agent = ScriptedAgent(self, steps)

    def release(self) -> None:
        """Let a :func:`wait` step go on."""
        self._inbox.put([{"type": RELEASE}])

    def subscribe(self, deltas: frozenset[str], drop_after: int | None, stall: str = "drop") -> Stream:
        stream = Stream(deltas, drop_after, stall)
        self.streams.append(stream)
        return stream

    def unsubscribe(self, stream: Stream) -> None:
        if stream in self.streams:
            self.streams.remove(stream)

    def close(self, last: Json | None = None) -> None:
        """End the session here: ``last`` (``session.deleted``) to open streams, which then end; the
        worker stops."""
        self._closed = True
        for stream in self.streams:
            if last is not None:
                stream.frames.put(sse_frame(last))
            stream.frames.put(None)
        self.streams.clear()
        self._inbox.put(None)

    def join(self) -> None:
        if self._thread.ident is not None:
            self._thread.join()

    def public(self) -> Json:
        """The session object as ``sessions.retrieve`` returns it."""
        return {**self.obj, "usage": self.usage_snapshot({})}

    def _play(self) -> None:
        self._agent.run()

    # ---- what the agent calls (Host) -------------------------------------------------------------

    def new_id(self) -> str:
        return self._ids.new("sevt")

    def emit(self, event: Json) -> Json:
        """Record ``event`` (keeping an id it has) and send it to every open stream."""
        with self._lock:
            event = {"id": event.get("id") or self.new_id(), **event, "processed_at": self._clock.now()}
            if self._closed:
                return event
            self.log.append(event)
            if event["type"] in _STATUS:
                self.obj["status"] = _STATUS[event["type"]]
            self.obj["updated_at"] = event["processed_at"]
            for stream in self.streams:
                stream.frames.put(sse_frame(event))
            self._lock.notify_all()
            return event

    def preview(self, event: Json, kind: str) -> None:
        """Send a delta (never recorded) to the streams that asked for ``kind``'s."""
        with self._lock:
            for stream in self.streams:
                if kind in stream.deltas:
                    stream.frames.put(sse_frame(event))

    def broadcast(self, data: bytes) -> None:
        """Write ``data`` as it is to every open stream (never recorded): a malformed frame."""
        with self._lock:
            for stream in self.streams:
                stream.frames.put(data)

    def take(self, block: bool = True) -> list[Json] | None:
        """The next batch of sent events; None when closed (or, with ``block=False``, when none)."""
        try:
            batch = self._inbox.get(block=block)
        except queue.Empty:
            return None
        if batch is None:
            self._inbox.put(None)  # closed for good: every later take sees it too
        return batch

    def add_usage(self, model_usage: Json) -> None:
        with self._lock:
            for key in self._totals:
                self._totals[key] += int(model_usage.get(key) or 0)

    def usage_snapshot(self, overrides: Json) -> Json:
        """The cumulative usage (``session.usage``'s and ``sessions.retrieve``'s); ``overrides`` stick."""
        with self._lock:
            self._overrides.update(overrides)
            t = self._totals
            cache = {
                "ephemeral_5m_input_tokens": t["cache_creation_input_tokens"],
                "ephemeral_1h_input_tokens": 0,
            }
            return {
                "input_tokens": t["input_tokens"],
                "output_tokens": t["output_tokens"],
                "cache_read_input_tokens": t["cache_read_input_tokens"],
                "cache_creation": cache,
                **self._overrides,
            }

    def _check(self, event: Json) -> None:
        """400 for an event the API would refuse: an unknown type, an answer naming no such call."""
        kind = event.get("type")
        if kind not in SENDABLE:
            raise ApiError(400, f"events: cannot send an event of type {kind!r}")
        if kind in _ANSWERS:
            key, types = _ANSWERS[kind]
            if not any(e["id"] == event.get(key) and e["type"] in types for e in self.log):
                raise ApiError(
                    400, f"{key}: no {' or '.join(types)} event {event.get(key)!r} in this session"
                )
        if kind == "user.tool_confirmation" and event.get("result") not in ("allow", "deny"):
            raise ApiError(400, "result: expected 'allow' or 'deny'")
