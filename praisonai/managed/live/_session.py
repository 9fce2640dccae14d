"""One session as a process drives it: its lease, its history, its instance, and the writes that
make its event log the transcript.

Events are written before what they announce is acted on: :meth:`LiveSession.record` buffers and
streams an event, :meth:`LiveSession.flush` writes the buffer in one transaction, and the turn
flushes before every model request and every tool run. So a crash leaves a log whose last turn
is visibly open (a user message with no idle after it, a tool use with no result), and every
write is fenced by the lease: a process whose lease was taken over fails its next write with
``StaleSessionError`` and stops.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from collections.abc import Callable, Mapping
from typing import Any

import anyio

from praisonai._errors import HomeUnusableError, PraisonAIError, StaleSessionError
from praisonai.llm.types import Message, Usage
from praisonai.managed.events import Event
from praisonai.managed.instance import _source as _instance
from praisonai.managed.instance._source import InstanceSource
from praisonai.managed.instance._tools import InstanceTools
from praisonai.managed.live._history import TOOL_RESULTS, TOOL_USES, append_user, open_calls, rebuild
from praisonai.managed.store import LEASE_TTL_S, Lease, SessionRecord, SessionStore
from praisonai.sandbox import AsyncSandbox

Emit = Callable[[Event], None]
#: Seconds an instance may sit unused here before a turn checks that it still runs.
RECHECK_AFTER_S = 30.0


def ignore(event: Event) -> None:
    """The ``emit`` of a turn nobody streams."""


class LiveSession:
    """A session held under a lease by this process (see the module docstring)."""

    def __init__(
        self,
        store: SessionStore,
        record: SessionRecord,
        lease: Lease,
        source: InstanceSource,
    ) -> None:
        self.store, self.lease, self.source = store, lease, source
        self.id = record.id
        self.backend = record.backend
        self.remote_session_id = record.remote_session_id  # a hosted session's API id
        self.remote: dict[str, Any] = dict(record.remote or {})
        self.turn = record.turns
        self.reference: Mapping[str, Any] | None = record.sandbox
        self.pending_ids = tuple(str(p["event_id"]) for p in record.pending)
        self.usage = _usage(record.usage)
        self.history: list[Message] = []
        self.open: dict[str, Event] = {}
        self.last_seq = record.last_seq
        self.emit: Emit = ignore
        self.sandbox: AsyncSandbox | None = None
        self._tools: InstanceTools | None = None
        self._buffer: list[Event] = []
        self.used_at = time.monotonic()  # when a turn last ended here
        self._fields: dict[str, Any] = {}

    def load(self) -> None:
        """Rebuild the history and the open tool uses from the stored transcript (a hosted
        session keeps its history remotely: its turn reads the log itself).
        A log that cannot be read back marks the session ``error``, saying why (it must not be
        left looking ``running`` forever), and the error goes on to the caller: the caller holds
        the session's lease."""
        if self.backend == "anthropic":
            return
        try:
            events = [stored.event for stored in self.store.events(self.id)]
        except HomeUnusableError as exc:
            error = {"type": "unknown_error", "message": str(exc), "retry_status": {"type": "terminal"}}
            with contextlib.suppress(PraisonAIError):  # the store itself may be what is broken
                self.store.update(self.lease, status="error", last_error=error)
            raise
        self.history = rebuild(events)
        self.open = {ev.id: ev for ev in open_calls(events)}

    # ---- the log ---------------------------------------------------------------------------

    def record(self, *events: Event) -> None:
        """Stream ``events`` and queue them for the log (ephemeral ones are only streamed)."""
        for ev in events:
            if not ev.ephemeral:
                self._buffer.append(ev)
                if ev.type in TOOL_USES:
                    self.open[ev.id] = ev
                elif ev.type in TOOL_RESULTS:
                    self.open.pop(str(ev.data.get("tool_use_id") or ev.data.get("custom_tool_use_id")), None)
            self.emit(ev)

    def stage(self, **fields: Any) -> None:
        """Set ``fields`` of the session's row with the next write."""
        self._fields.update(fields)

    def flush(self, **fields: Any) -> None:
        """Write the queued events and the staged and given ``fields`` of the session's row (one
        transaction, fenced by the lease)."""
        fields = {**self._fields, **fields}
        if self._buffer or fields:
            record = self.store.update(self.lease, events=self._buffer, turn=self.turn, **fields)
            self.last_seq, self._buffer, self._fields = record.last_seq, [], {}

    def add_usage(self, model: str, usage: Usage) -> None:
        """One model request's usage: adds to this turn's and to the session's."""
        self.usage = self.usage + usage
        spent = {
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cache_read_input_tokens": usage.cache_read_tokens,
            "cache_creation_input_tokens": usage.cache_write_tokens,
            "requests": usage.requests,
        }
        self.store.add_usage(self.lease, turn=self.turn, model=model, usage=spent)

    def resumed(self) -> None:
        """Say in the log that this process took the session over."""
        self.record(
            Event(
                "session.resumed",
                {"host": socket.gethostname(), "pid": os.getpid(), "lease_epoch": self.lease.epoch},
            )
        )

    def release(self) -> None:
        self.store.release(self.lease)

    async def keep_leased(self) -> None:
        """Renew the lease until cancelled, while a turn runs (a long tool call outlasts a lease);
        a stale lease just stops renewing: the turn's next write fails, fenced off."""
        with contextlib.suppress(StaleSessionError):
            while True:
                await anyio.sleep(LEASE_TTL_S / 3)
                self.store.renew(self.lease)

    # ---- the instance ----------------------------------------------------------------------

    async def attach(self) -> None:
        """Reattach the recorded instance, or replace it (announced) when it is gone; an instance
        this process holds is checked again when unused for :data:`RECHECK_AFTER_S` (its idle
        policy may have stopped it). A session that never used an instance has nothing to attach:
        its first tool call provisions one (with resources to put in it, this does, now)."""
        if self.reference is None:
            if self.source.resources:  # the upload or clone now: its failure comes before a model call
                made, reference, event = await self.source.provision()
                self._adopt(made, reference, event, status="attached")
            return
        if self.sandbox is not None:
            if time.monotonic() - self.used_at < RECHECK_AFTER_S or await _instance.alive(self.sandbox):
                return
        else:
            found = await _instance.reattach(self.reference, self.source.compute)
            if found is not None:
                self.sandbox, event = found
                self.record(event)  # reattached, or resumed from pause
                return
        env = self.source.fields.get("env") or {}
        sandbox, reference, event = await _instance.replace(self.reference, env, self.source.compute)
        self._adopt(sandbox, reference, event, status="replaced")

    async def tools(self) -> InstanceTools:
        """The toolset on the session's instance, provisioned on first use."""
        if self.sandbox is None:
            await self.attach()
        if self.sandbox is None:
            sandbox, reference, event = await self.source.provision()
            self._adopt(sandbox, reference, event, status="attached")
        if self._tools is None:
            assert self.sandbox is not None
            self._tools = InstanceTools(self.sandbox, _instance.working_dir(self.reference or {}))
        return self._tools

    def _adopt(self, sandbox: AsyncSandbox, reference: dict[str, Any], event: Event, *, status: str) -> None:
        self.sandbox, self.reference, self._tools = sandbox, reference, None
        self.record(event)
        if event.type == "sandbox.replaced":  # the model must know what it lost (as a resumed log says)
            append_user(self.history, _instance.REPLACED_NOTE)
        self.flush(sandbox=reference, sandbox_status=status)


def _usage(value: Mapping[str, int]) -> Usage:
    return Usage(
        int(value.get("input_tokens", 0)),
        int(value.get("output_tokens", 0)),
        int(value.get("requests", 0)),
        int(value.get("cache_read_input_tokens", 0)),
        int(value.get("cache_creation_input_tokens", 0)),
    )
