"""One turn of a hosted session: Anthropic runs the agent loop, we stream its events into the
session's log and answer what it asks (``managed-agents.md`` e.5).

:meth:`HostedTurn.run` opens the event stream first (it has no replay), logs what the remote log
has that ours lacks (a catch-up after the last event we logged), answers what the previous turn
left pending (and reads that turn to its end: a message sent meanwhile would only queue behind
it), then sends the prompt (logged first, sent once: see :mod:`._events`), if any. It then
reads events by type until the session stops: every event but the text deltas goes to the log
under the API's id (the store's upsert on the id drops repeats); ``requires_action`` is answered —
confirmations through ``confirm`` (deny when there is none; ``None`` leaves the use pending and
ends the turn), custom tools through ``on_custom_tool`` (once per tool use: skipped when the log
has its result) — and the loop goes on; ``end_turn``, ``refusal``, ``budget_reached`` and
``retries_exhausted`` end the turn, as do ``session.status_terminated`` and ``session.deleted``.
A ``session.error`` that is retried is logged and read past; one that is ``exhausted`` or
``terminal`` ends the turn, is persisted, then raised as :class:`ManagedSessionError`. Any other
failure (the API quiet past ``turn_timeout_s``, a malformed event, a rate limit, a callback's
error) ends the turn as an error in the log (a ``session.error`` and an idle with
``retries_exhausted``, under our ids) and in the row (status ``error``), then is raised: the
session is never left ``running``, and the next turn catches up from the API's log.
Per-request usage (``span.model_request_end``) adds to the turn; the cumulative snapshots
(``session.usage``, then ``sessions.retrieve`` at the end) replace the session's counters.
:meth:`HostedTurn.interrupt` sends ``user.interrupt``; the turn then ends ``interrupted``.
"""

from __future__ import annotations

import contextlib
import inspect
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import anyio
import anyio.to_thread

from praisonai._errors import ManagedSessionError, PraisonAIError, StaleSessionError
from praisonai._limits import DEFAULT_TURN_TIMEOUT_S
from praisonai._tasks import beside
from praisonai.llm.types import Usage
from praisonai.managed.events import Event, text_content
from praisonai.managed.hosted import _events
from praisonai.managed.hosted._events import Feed, MalformedEventError, Raw
from praisonai.managed.live._result import STATUS, Decision, ManagedResult, ToolRequest
from praisonai.managed.live._session import LiveSession

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

#: How long a custom tool may run (the SDK's runner allows 325 s: longer than its bash tool's limit).
CUSTOM_TOOL_TIMEOUT_S: Final = 325.0
#: Stop reasons of the hosted API that the local STATUS does not name.
HOSTED_STATUS: Final = {**STATUS, "refusal": "idle", "terminated": "terminated"}
_CONFIRMED: Final = ("agent.tool_use", "agent.mcp_tool_use")
_ANSWERS: Final = {"user.tool_confirmation": "tool_use_id", "user.custom_tool_result": "custom_tool_use_id"}


@dataclass
class HostedSetup:
    """What a hosted turn needs that outlives it. ``serve_tools``: for a self-hosted environment,
    a context manager that runs our sandbox's tool worker; it is entered around the turn.
    ``turn_timeout_s``: how long the turn waits with no new event from the API (see ``Feed``)."""

    client: AsyncAnthropic
    remote_session_id: str
    model: str
    confirm: Callable[[ToolRequest], Decision | bool | Awaitable[Decision | bool]] | None
    on_custom_tool: Callable[[str, Mapping[str, Any]], Any] | None
    deltas: bool = True
    serve_tools: Callable[[], AbstractAsyncContextManager[None]] | None = None
    turn_timeout_s: float | None = DEFAULT_TURN_TIMEOUT_S


class HostedTurn:
    """One turn on a live hosted session; :meth:`run` once (see the module docstring)."""

    def __init__(self, setup: HostedSetup, live: LiveSession) -> None:
        self.setup, self.s = setup, live
        self._sid = setup.remote_session_id
        self._text = ""
        self._usage = Usage()
        self._uses: dict[str, Event] = {}  # tool uses by id, from the log and this turn
        self._answered: set[str] = set()  # tool-use ids the log has an answer for
        self._seen: set[str] = set()  # event ids logged (or ours, echoed): never logged again
        self._since: float | None = None  # processed_at of the last remote event logged
        self._last_id: str | None = None
        self._idle: dict[str, Any] | None = None  # the last idle's stop reason; None: running
        self._unechoed: list[Any] = []  # prompts logged after the last remote event (sent, maybe)
        self._details: dict[str, Any] = {}  # the row's remote details
        self._fatal: dict[str, Any] | None = None  # a session.error that is not retried
        self._interrupted = False
        self._wake: anyio.Event | None = None
        self._failure: Exception | None = None

    def interrupt(self) -> None:
        """Stop the turn: ``user.interrupt`` is sent (call on the loop the turn runs on)."""
        self._interrupted = True
        if self._wake is not None:
            self._wake.set()

    async def run(self, prompt: str | None) -> ManagedResult:
        """The turn; ``prompt`` None only answers what was left pending (after a catch-up)."""
        s = self.s
        self._load()
        s.turn += 1
        s.stage(status="running", turns=s.turn)
        self._wake = anyio.Event()
        if self._interrupted:
            self._wake.set()
        serve = self.setup.serve_tools() if self.setup.serve_tools is not None else contextlib.nullcontext()
        feed = Feed(self.setup.client, self._sid, deltas=self.setup.deltas, seen=self._seen,
                    since=self._since, turn_timeout_s=self.setup.turn_timeout_s)  # fmt: skip
        try:
            async with serve, feed:
                stop = await self._drive(feed, prompt)
        except (StaleSessionError, ManagedSessionError):
            raise  # another process drives the session now / persisted already
        except Exception as exc:  # the API, the network or a callback failed the turn: the log says so
            self._fail(exc)
            raise
        if self._fatal is not None:
            await self._finish_fatal(stop, self._fatal)
        return await self._finish(stop)

    # ---- the log ---------------------------------------------------------------------------

    def _load(self) -> None:
        """What the log already holds: ids, tool uses and their answers, the last idle, the last
        remote time; and the row's remote details."""
        for stored in self.s.store.events(self.s.id):
            self._note(stored.event)
        self._details = dict(self.s.store.get_session(self.s.id).remote or {})

    def _note(self, ev: Event) -> None:
        self._seen.add(ev.id)
        if ev.id.startswith("levt_"):  # ours: a prompt (the API's copy has another id), a failed end
            if ev.type == "user.message":
                self._unechoed.append(ev.data.get("content"))
            return  # our record of a failure says nothing of the remote session's state
        # the API's clock: where a catch-up listing starts
        self._since, self._last_id = max(self._since or 0.0, ev.processed_at), ev.id
        self._unechoed.clear()
        if ev.type in (*_CONFIRMED, "agent.custom_tool_use"):
            self._uses[ev.id] = ev
        elif ev.type == "session.status_running":
            self._idle = None
        elif ev.type == "session.status_idle":
            self._idle = dict(ev.data.get("stop_reason") or {"type": "end_turn"})
        elif ev.type in ("session.status_terminated", "session.deleted"):
            self._idle = {"type": "terminated"}
        elif ev.type in _ANSWERS:
            self._answered.add(str(ev.data.get(_ANSWERS[ev.type])))

    def _take(self, raw: Raw) -> Event:
        """Log a remote event (deltas are only streamed) and account for it."""
        ev = _events.to_event(raw)
        self.s.record(ev)
        if ev.ephemeral:
            return ev
        self._note(ev)
        self.s.flush()  # as it arrives: another process showing the session sees the turn go on
        if ev.type == "agent.message":
            self._text = ev.text
        elif ev.type == "span.model_request_end":
            usage = _events.request_usage(ev.data.get("model_usage") or {})
            self.s.add_usage(self.setup.model, usage)
            self._usage = self._usage + usage
        elif ev.type == "session.usage":
            self._snapshot(ev.data.get("usage") or {})
        return ev

    def _snapshot(self, usage: Mapping[str, Any], **remote: Any) -> None:
        """A cumulative snapshot replaces the session's counters (never added to them)."""
        c = _events.counters(usage)
        self.s.usage = Usage(
            c["input_tokens"],
            c["output_tokens"],
            self.s.usage.requests,
            c["cache_read_input_tokens"],
            c["cache_creation_input_tokens"],
        )
        self.s.stage(usage=c, remote=self._remote({"usage": dict(usage), **remote}))

    def _remote(self, fields: Mapping[str, Any]) -> dict[str, Any]:
        """The session row's ``remote`` details, updated with ``fields``."""
        self._details.update(last_event_id=self._last_id, last_processed_at=self._since, **fields)
        return dict(self._details)

    # ---- the turn --------------------------------------------------------------------------

    async def _drive(self, feed: Feed, prompt: str | None) -> dict[str, Any]:
        """Catch up, finish the previous turn if it waits on us (a message sent meanwhile would
        only queue behind it), then send the prompt; the stop reason."""
        s = self.s
        if self._seen:
            await self._catch_up(feed)
        stop = self._idle
        if stop is None and self._since is not None:  # the remote turn goes on: read it out
            stop = await self._consume(feed)
        elif stop is not None and stop["type"] == "requires_action":
            ids = [str(i) for i in stop.get("event_ids") or ()]
            stop = await self._resolve(feed, ids) or await self._consume(feed)
        stop = stop or {"type": "end_turn"}
        if prompt is None or stop["type"] in ("requires_action", "interrupted", "terminated"):
            return stop
        content = text_content(prompt)
        s.record(Event("user.message", {"content": content}))
        s.flush()  # the prompt is in the log before the API has it
        for echo in await self._send(feed, [{"type": "user.message", "content": content}]):
            feed.fresh(echo)  # the same message under the API's id: logged once, above
        return await self._consume(feed)

    async def _catch_up(self, feed: Feed) -> None:
        """Log what the remote log got after our last event; the API's copy of a prompt we logged
        last (a process that sent it and stopped before reading on) is not logged twice."""
        for raw in await feed.missed():
            if raw["type"] == "user.message" and self._unechoed and raw.get("content") == self._unechoed[0]:
                self._unechoed.pop(0)
                continue
            self._take(raw)

    async def _consume(self, feed: Feed) -> dict[str, Any]:
        """Read until the session stops; an interrupt is sent meanwhile, when asked for."""
        stop = await beside(lambda: self._read(feed), lambda: self._interrupter(feed))
        if self._failure is not None:
            raise self._failure
        return stop

    async def _read(self, feed: Feed) -> dict[str, Any]:
        async with contextlib.aclosing(feed.events()) as events:
            async for raw in events:
                ev = self._take(raw)
                stop = None if ev.ephemeral else await self._react(feed, ev)
                if stop is not None:
                    return stop
        raise AssertionError("the feed ends only by raising")

    async def _react(self, feed: Feed, ev: Event) -> dict[str, Any] | None:
        """What an event means for the turn: the stop reason that ends it, else None."""
        if ev.type == "session.status_idle":
            self.s.flush()
            reason = dict(ev.data.get("stop_reason") or {"type": "end_turn"})
            if self._interrupted:
                return {"type": "interrupted"}
            if reason.get("type") == "requires_action" and self._fatal is None:
                return await self._resolve(feed, [str(i) for i in reason.get("event_ids") or ()])
            return reason
        if ev.type == "session.error":
            error = dict(ev.data.get("error") or {})
            if (error.get("retry_status") or {}).get("type") in ("exhausted", "terminal"):
                self._fatal = error  # the idle or the termination that follows ends the turn
        elif ev.type in ("session.status_terminated", "session.deleted"):
            return {"type": "terminated"}
        return None

    async def _interrupter(self, feed: Feed) -> None:
        assert self._wake is not None
        await self._wake.wait()
        try:
            with anyio.CancelScope(shield=True):  # a send under way completes when the turn ends
                await self._send(feed, [{"type": "user.interrupt"}], log=True)
        except Exception as exc:  # the reader raises it when the turn ends
            self._failure = exc

    async def _send(self, feed: Feed, events: Sequence[Raw], *, log: bool = False) -> list[Raw]:
        """Send ``events`` once; with ``log``, their echoes go to the log (under the API's ids)."""
        self.s.flush()
        echoes = await _events.send(self.setup.client, self._sid, events, since=feed.since, seen=self._seen)
        if log:
            for echo in echoes:
                if feed.fresh(echo):
                    self._take(echo)
            self.s.flush()
        return echoes

    # ---- requires_action -------------------------------------------------------------------

    async def _resolve(self, feed: Feed, ids: Sequence[str]) -> dict[str, Any] | None:
        """Answer the listed tool uses not answered yet; the stop reason when some are left
        pending (a confirmation that said None), else None (the session goes on)."""
        answers: list[Raw] = []
        pending: list[str] = []
        for ident in ids:
            use = self._uses.get(ident)
            if ident in self._answered:
                continue  # answered already (the log has it)
            if use is None:  # not a tool use the log has: left for the caller to see
                pending.append(ident)
            elif use.type == "agent.custom_tool_use":
                answers.append(await self._custom(use))
            elif (decision := await self._decide(use)) is None:
                pending.append(ident)
            else:
                reason = {"deny_message": "denied by the user"} if decision == "deny" else {}
                answers.append(
                    {"type": "user.tool_confirmation", "tool_use_id": ident, "result": decision, **reason}
                )
        if answers:
            await self._send(feed, answers, log=True)
        return {"type": "requires_action", "event_ids": pending} if pending else None

    async def _decide(self, use: Event) -> Decision:
        confirm = self.setup.confirm
        if confirm is None:  # nobody to ask: the safe answer
            return "deny"
        request = ToolRequest(use.id, str(use.data.get("name")), dict(use.data.get("input") or {}), self.s.id)
        answer: Any = confirm(request)
        if inspect.isawaitable(answer):
            answer = await answer
        if isinstance(answer, bool):
            answer = "allow" if answer else "deny"
        if answer not in ("allow", "deny", None):
            raise PraisonAIError(f"on_tool_confirmation returned {answer!r}; return 'allow', 'deny' or None")
        return answer  # type: ignore[no-any-return]

    async def _custom(self, use: Event) -> Raw:
        """``user.custom_tool_result`` for ``use``: the callback's value, or an error (``is_error``)."""
        self.s.flush()  # the tool use is in the log before it runs
        name, arguments = str(use.data.get("name")), dict(use.data.get("input") or {})
        callback = self.setup.on_custom_tool
        is_error = True
        if callback is None:
            text = f"Error: no handler for the custom tool {name} (on_custom_tool is not set)"
        else:
            try:
                with anyio.fail_after(CUSTOM_TOOL_TIMEOUT_S):
                    value = await anyio.to_thread.run_sync(callback, name, arguments, abandon_on_cancel=True)
                    if inspect.isawaitable(value):
                        value = await value
                text, is_error = value if isinstance(value, str) else json.dumps(value, default=str), False
            except TimeoutError:
                text = f"Error: the custom tool {name} did not answer within {CUSTOM_TOOL_TIMEOUT_S:.0f} s"
            except Exception as exc:
                text = f"Error: {type(exc).__name__}: {exc}"
        return {
            "type": "user.custom_tool_result",
            "custom_tool_use_id": use.id,
            "content": text_content(text),
            "is_error": is_error,
        }

    # ---- endings ---------------------------------------------------------------------------

    def _fail(self, exc: Exception) -> None:
        """End the turn as an error in the log and the row (resumable: the remote session goes on,
        and the next turn catches up with it). A malformed event with an id is logged as
        ``remote.malformed`` under that id, so no later catch-up reads it again."""
        s = self.s
        if isinstance(exc, MalformedEventError) and exc.event_id is not None:
            note = Event("remote.malformed", {"problem": str(exc)}, exc.event_id, self._since or 0.0)
            s.record(note)
            self._note(note)
        message = str(exc) if isinstance(exc, PraisonAIError) else f"{type(exc).__name__}: {exc}"
        error = {"type": "unknown_error", "message": message, "retry_status": {"type": "exhausted"}}
        stop = {"type": "retries_exhausted"}
        s.record(
            Event("session.error", {"error": error}), Event("session.status_idle", {"stop_reason": stop})
        )
        s.flush(status="error", stop_reason=stop, pending=[], last_error=error)

    async def _finish_fatal(self, stop: dict[str, Any], error: Mapping[str, Any]) -> None:
        """Persist the turn's end, then raise the error the session will not retry."""
        retry = str((error.get("retry_status") or {}).get("type", "terminal"))
        if retry == "terminal":
            stop = {"type": "terminated"}
        elif stop.get("type") != "terminated":
            stop = {"type": "retries_exhausted"}
        await self._finish(stop, last_error=dict(error))
        raise ManagedSessionError(
            f"session {self._sid}: {error.get('type', 'unknown_error')}: {error.get('message', '')}",
            error_type=str(error.get("type", "unknown_error")),
            retry_status=retry,
        )

    async def _finish(self, stop: dict[str, Any], **extra: Any) -> ManagedResult:
        s = self.s
        reason = str(stop["type"])
        status = HOSTED_STATUS.get(reason, "idle")
        uses = [self._uses.get(i, Event("unknown", {}, i)) for i in stop.get("event_ids", ())]
        pending = tuple(
            {
                "event_id": u.id,
                "kind": "confirmation",
                "name": u.data.get("name"),
                "input": u.data.get("input"),
            }
            for u in uses
            if reason == "requires_action"
        )
        s.pending_ids = tuple(str(p["event_id"]) for p in pending)
        session = await _events.retrieve(self.setup.client, self._sid)
        if session is not None:  # the authoritative usage, stats and status
            stats = session.get("stats") or {}
            self._snapshot(session.get("usage") or {}, status=session.get("status"), stats=stats)
        s.flush(status=status, stop_reason=stop, pending=list(pending), **extra)
        return ManagedResult(self._text, reason, status, s.id, self._usage, pending)
