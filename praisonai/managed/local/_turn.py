"""One turn of the local managed loop: the model streams, tools run on the instance, every step is
an event in the session's log.

A turn first answers the tool uses left open (approvals that were pending; calls whose process
died under them get a synthetic "interrupted" result), then sends the prompt, then loops: one
model request (streamed: ``event_start``/``event_delta`` pieces, then ``agent.message``), then
each tool use it asked for — confirmed first when its permission says ``ask`` — until the model
answers without tools (``end_turn``), an approval is left pending (``requires_action``), the
token budget or ``max_turns`` requests are spent (``budget_reached``/``max_turns``), the model
or its provider's filter refuses (``refusal``), or
:meth:`Turn.interrupt` cuts it (``interrupted``: the model stream is closed, the running command
is killed in the instance, a partial message is kept, marked ``interrupted``).
"""

from __future__ import annotations

import contextlib
import inspect
import json
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.to_thread

from praisonai._errors import PraisonAIError, StaleSessionError
from praisonai.compute.config import ComputeConfig
from praisonai.llm.tools import ToolCall, ToolSpec, call_tool, tool_name, tool_spec
from praisonai.llm.types import AssistantMessage, Completion, LLMClient, ToolResult, Usage
from praisonai.managed import checkpoints
from praisonai.managed.config import LocalManagedConfig, ToolPlan
from praisonai.managed.events import Event, delta, idle, new_id, text_content
from praisonai.managed.instance._tools import instance_specs
from praisonai.managed.live._history import append_user, result_event
from praisonai.managed.live._result import STATUS, Decision, ManagedResult, ToolRequest
from praisonai.managed.live._session import LiveSession

INTERRUPTED = "interrupted: the turn was stopped before this tool finished (it may have partly run)"
NOT_RUN = "not run: the turn was interrupted before this tool started"
CRASHED = (
    "interrupted: the process running this tool stopped before its result was recorded (it may have run)"
)


@dataclass
class TurnSetup:
    """What a turn needs that outlives it: the model, the tools and the callbacks."""

    client: LLMClient
    model: str
    system: str
    plan: ToolPlan
    specs: Sequence[ToolSpec]
    confirm: Callable[[ToolRequest], Decision | bool | Awaitable[Decision | bool]] | None
    on_custom_tool: Callable[[str, Mapping[str, Any]], Any] | None
    max_turns: int
    budget_tokens: int | None
    checkpoints: bool
    functions: Mapping[str, Callable[..., Any]] = field(init=False)

    def __post_init__(self) -> None:
        self.functions = {tool_name(f): f for f in self.plan.functions}

    @classmethod
    def of(
        cls,
        client: LLMClient,
        model: str,
        config: LocalManagedConfig,
        plan: ToolPlan,
        confirm: Callable[[ToolRequest], Decision | bool | Awaitable[Decision | bool]] | None,
        on_custom_tool: Callable[[str, Mapping[str, Any]], Any] | None,
    ) -> TurnSetup:
        """The setup of ``config``'s turns: the instance's tools (under its working dir), its
        Python functions and its custom tools, in that order."""
        specs = [
            *instance_specs(plan.instance, config.working_dir or ComputeConfig().working_dir),
            *map(tool_spec, plan.functions),
            *(ToolSpec(t.name, t.description, t.input_schema) for t in plan.custom),
        ]
        return cls(
            client,
            model,
            config.system,
            plan,
            specs,
            confirm,
            on_custom_tool,
            config.max_turns,
            config.budget_tokens,
            config.checkpoints,
        )


class Turn:
    """One turn on a live session; :meth:`run` once."""

    def __init__(self, setup: TurnSetup, session: LiveSession) -> None:
        self.setup, self.s = setup, session
        self._scope: anyio.CancelScope | None = None
        self._interrupted = False
        self._partial: tuple[str, list[str]] | None = None  # the streaming message: id, pieces
        self._running: Event | None = None  # the tool use being executed
        self._text = ""
        self._usage = Usage()

    def interrupt(self) -> None:
        """Stop the turn (call on the loop the turn runs on)."""
        self._interrupted = True
        if self._scope is not None:
            self._scope.cancel()

    async def run(self, prompt: str | None) -> ManagedResult:
        s = self.s
        s.turn += 1
        s.record(Event("session.status_running"))
        s.stage(status="running", turns=s.turn)
        stop: dict[str, Any] = {"type": "end_turn"}
        with anyio.CancelScope() as self._scope:
            if self._interrupted:
                self._scope.cancel()
            try:
                still, answered = await self._answer_open()
                if still:
                    stop = {"type": "requires_action", "event_ids": [u.id for u in still]}
                elif prompt is not None or answered:
                    if prompt is not None:
                        s.record(Event("user.message", {"content": text_content(prompt)}))
                        append_user(s.history, prompt)
                    stop = await self._loop()
            except StaleSessionError:
                raise  # another process drives the session now: write nothing more
            except Exception as exc:  # any failure ends the turn as an error: never left "running"
                self._finish_error(exc)
                raise
        if self._interrupted:
            stop = self._record_interrupt()
        if self.setup.checkpoints and s.sandbox is not None:
            saved = await checkpoints.take(s.sandbox, s.id, s.turn)
            if saved is not None:
                s.record(saved)
        return self._finish(stop)

    # ---- the loop --------------------------------------------------------------------------

    async def _loop(self) -> dict[str, Any]:
        for _ in range(self.setup.max_turns):
            budget = self.setup.budget_tokens
            if budget is not None and self.s.usage.total_tokens >= budget:
                return {"type": "budget_reached"}
            completion = await self._model_request()
            if completion.refused:  # its tool calls, if any, are not run
                return {"type": "refusal"}
            if not completion.tool_calls:
                return {"type": "end_turn"}
            pending = await self._run_calls([self._use(c) for c in completion.tool_calls])
            if pending:
                return {"type": "requires_action", "event_ids": [u.id for u in pending]}
        return {"type": "max_turns"}

    async def _model_request(self) -> Completion:
        s, setup = self.s, self.setup
        start = Event("span.model_request_start", {"model": setup.model})
        s.record(start)
        s.flush()  # the prompt is in the log before the model sees it
        message_id, pieces = new_id(), list[str]()
        self._partial = (message_id, pieces)
        try:
            completion = await self._stream(message_id, pieces)
        except StaleSessionError:
            raise
        except Exception:  # a cut or failed reply: what came is kept once, marked partial
            self._keep_partial({"partial": True})
            s.record(Event("span.model_request_end", {"model_request_start_id": start.id, "is_error": True}))
            raise
        self._partial = None
        if completion.text:
            self._text = completion.text
            s.record(Event("agent.message", {"content": text_content(completion.text)}, id=message_id))
        calls = () if completion.refused else completion.tool_calls  # a refusal's calls are not run
        s.history.append(AssistantMessage(completion.text, calls))
        s.record(
            Event(
                "span.model_request_end",
                {
                    "model_request_start_id": start.id,
                    "is_error": False,
                    "model_usage": _model_usage(completion.usage),
                },
            )
        )
        s.add_usage(setup.model, completion.usage)
        self._usage = self._usage + completion.usage
        return completion

    async def _stream(self, message_id: str, pieces: list[str]) -> Completion:
        """Stream one model reply: its pieces as ``event_delta``s of message ``message_id``."""
        s, setup = self.s, self.setup
        stream = setup.client.stream(setup.system, s.history, setup.specs)
        async with contextlib.aclosing(stream):  # an interrupt closes the HTTP stream at once
            async for piece in stream:
                if not isinstance(piece, str):
                    return piece
                if not pieces:
                    s.emit(Event("event_start", {"event": {"type": "agent.message", "id": message_id}}))
                pieces.append(piece)
                s.emit(delta(message_id, piece))
        raise AssertionError("an LLM client's stream ends with its Completion")

    def _use(self, call: ToolCall) -> Event:
        name = call.name
        custom = any(t.name == name for t in self.setup.plan.custom)
        permission = self.setup.plan.instance.get(name, "allow")
        try:
            arguments = _arguments(call.arguments)
        except ValueError:
            arguments = {"_unparsed": str(call.arguments)}
        data = {"name": name, "input": arguments, "call_id": call.id, "evaluated_permission": permission}
        event = Event("agent.custom_tool_use" if custom else "agent.tool_use", data)
        self.s.record(event)
        return event

    async def _run_calls(self, uses: Sequence[Event]) -> list[Event]:
        """Run each use in order; those left waiting for approval (and all after them) are returned."""
        pending: list[Event] = []
        for use in uses:
            decision = None if pending else await self._decide(use)
            if decision is None:
                pending.append(use)
                continue
            await self._answer(use, decision)
        return pending

    async def _answer_open(self) -> tuple[list[Event], bool]:
        """Answer the uses left open: orphans get CRASHED, pending approvals are asked again.
        Returns the uses still left pending, and whether any pending one was answered."""
        s = self.s
        opens = list(s.open.values())
        pending_ids = set(s.pending_ids)
        orphans = [u for u in opens if u.id not in pending_ids]
        for use in orphans:
            self._result(use, CRASHED, is_error=True)
        waiting = [u for u in opens if u.id in pending_ids]
        still = await self._run_calls(waiting)
        return still, bool(waiting) and not still

    async def _decide(self, use: Event) -> str | None:
        permission = use.data.get("evaluated_permission", "allow")
        if permission != "ask":
            return "deny" if permission == "deny" else "allow"
        confirm = self.setup.confirm
        if confirm is None:  # nobody to ask: the safe answer
            answer: Any = "deny"
        else:
            request = ToolRequest(use.id, str(use.data["name"]), dict(use.data["input"]), self.s.id)
            answer = confirm(request)
            if inspect.isawaitable(answer):
                answer = await answer
        decision = {True: "allow", False: "deny"}.get(answer, answer) if isinstance(answer, bool) else answer
        if decision not in ("allow", "deny", None):
            raise PraisonAIError(f"on_tool_confirmation returned {answer!r}; return 'allow', 'deny' or None")
        if decision is not None:
            reason = {} if decision == "allow" else {"deny_message": "denied by the user"}
            self.s.record(
                Event("user.tool_confirmation", {"tool_use_id": use.id, "result": decision, **reason})
            )
        return decision

    async def _answer(self, use: Event, decision: str) -> None:
        if decision == "deny":
            self._result(
                use, f"Error: the use of {use.data['name']} was denied; do not retry it", is_error=True
            )
            return
        self.s.flush()  # the tool use is in the log before it runs
        self._running = use
        started = time.monotonic()
        content, is_error, extra = await self._execute(use)
        self._running = None
        self._result(
            use, content, is_error=is_error, duration_s=round(time.monotonic() - started, 3), **extra
        )

    async def _execute(self, use: Event) -> tuple[str, bool, dict[str, Any]]:
        name, arguments = str(use.data["name"]), dict(use.data["input"])
        if "_unparsed" in arguments:
            return f"Error: the arguments of {name} are not a JSON object", True, {}
        if use.type == "agent.custom_tool_use":
            return await self._custom(name, arguments)
        if name in self.setup.plan.instance:
            outcome = await (await self.s.tools()).call(name, arguments)
            return outcome.content, outcome.is_error, {"exit_code": outcome.exit_code}
        text = await call_tool(self.setup.functions, ToolCall(str(use.data["call_id"]), name, arguments))
        return text, text.startswith("Error"), {}

    async def _custom(self, name: str, arguments: dict[str, Any]) -> tuple[str, bool, dict[str, Any]]:
        callback = self.setup.on_custom_tool
        if callback is None:
            return f"Error: no handler for the custom tool {name} (on_custom_tool is not set)", True, {}
        try:
            value = await anyio.to_thread.run_sync(callback, name, arguments)
            if inspect.isawaitable(value):
                value = await value
        except Exception as exc:
            return f"Error: {type(exc).__name__}: {exc}", True, {}
        return value if isinstance(value, str) else json.dumps(value, default=str), False, {}

    def _result(self, use: Event, content: str, *, is_error: bool, **extra: Any) -> None:
        self.s.record(result_event(use, content, is_error=is_error, **extra))
        self.s.history.append(ToolResult(str(use.data["call_id"]), str(use.data["name"]), content))

    # ---- endings ---------------------------------------------------------------------------

    def _keep_partial(self, mark: dict[str, bool]) -> None:
        """Record the streaming message's text, if any, as an ``agent.message`` with ``mark``."""
        s, partial, self._partial = self.s, self._partial, None
        if partial is not None and partial[1]:
            message_id, pieces = partial
            self._text = "".join(pieces)
            s.record(Event("agent.message", {"content": text_content(self._text), **mark}, id=message_id))
            s.history.append(AssistantMessage(self._text))

    def _record_interrupt(self) -> dict[str, Any]:
        s = self.s
        self._keep_partial({"interrupted": True})
        for use in list(s.open.values()):
            self._result(use, INTERRUPTED if use is self._running else NOT_RUN, is_error=True)
        s.record(Event("user.interrupt"))
        return {"type": "interrupted"}

    def _finish_error(self, exc: Exception) -> None:
        ours = isinstance(exc, PraisonAIError)
        model = isinstance(exc, PraisonAIError) and exc.op == "model"
        error = {
            "type": "model_request_failed_error" if model else "unknown_error",
            "message": str(exc) if ours else f"{type(exc).__name__}: {exc}",
            "retry_status": {"type": "exhausted"},
        }
        self.s.record(Event("session.error", {"error": error}))
        self._finish({"type": "retries_exhausted"}, last_error=error)

    def _finish(self, stop: dict[str, Any], **extra: Any) -> ManagedResult:
        s = self.s
        reason = str(stop["type"])
        pending = tuple(
            {"event_id": u.id, "kind": "confirmation", "name": u.data["name"], "input": u.data["input"]}
            for u in s.open.values()
            if u.id in stop.get("event_ids", ())
        )
        s.pending_ids = tuple(p["event_id"] for p in pending)
        s.record(idle(reason, **{k: v for k, v in stop.items() if k != "type"}))
        s.flush(status=STATUS.get(reason, "idle"), stop_reason=stop, pending=list(pending), **extra)
        return ManagedResult(self._text, reason, STATUS.get(reason, "idle"), s.id, self._usage, pending)


def _model_usage(usage: Usage) -> dict[str, int]:
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_input_tokens": usage.cache_read_tokens,
        "cache_creation_input_tokens": usage.cache_write_tokens,
    }


def _arguments(raw: str | Mapping[str, Any]) -> dict[str, Any]:
    value = json.loads(raw or "{}") if isinstance(raw, str) else raw
    if not isinstance(value, Mapping):
        raise ValueError(f"got {type(value).__name__}")
    return dict(value)
