"""The hosted agent the fake plays: a script of steps per session, and the loop that performs it.

Each ``user.message`` starts a turn: ``session.status_running``, then steps until one ends the turn
(:func:`end_turn`, :func:`stop`, a ``session.error`` that is ``exhausted`` or ``terminal``) or the
script runs out (an implicit ``end_turn``). Tool calls (:func:`custom_tool`, :func:`tool` with
``permission="ask"``) pile up until the next other step, which first puts the session idle with
``requires_action`` listing them and waits: a partial answer re-emits the idle with the rest, the
last one resumes (``session.status_running``). A ``user.interrupt`` ends the turn at the next step
or wait (idle, ``end_turn``) and drops the turn's remaining steps; a ``user.message`` that arrives
mid-turn is queued for after it.

On a ``self_hosted`` environment (:func:`hosted_by_client`) a built-in call that runs (allowed, or
confirmed) is not executed here: the session stays running until the client posts its
``user.tool_result``, and the script goes on from there.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, Protocol

from fakes.managed_agents._wire import Json

#: The marker :meth:`ManagedAgentsFake.release` puts in a session's inbox (never recorded).
RELEASE: Final = "fake.release"


@dataclass(frozen=True)
class Step:
    """One thing the scripted agent does; made by the functions below."""

    kind: str
    args: Mapping[str, Any] = field(default_factory=dict)


def say(
    text: str,
    *,
    chunks: int = 1,
    input_tokens: int = 10,
    output_tokens: int = 5,
    cache_read_tokens: int = 0,
    cache_write_tokens: int = 0,
) -> Step:
    """One model request answering ``text``: ``span.model_request_start``, on streams that asked for
    ``agent.message`` deltas an ``event_start`` and ``chunks`` ``event_delta`` pieces, the
    ``agent.message``, then ``span.model_request_end`` with this request's usage."""
    usage = {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cache_read_input_tokens": cache_read_tokens,
        "cache_creation_input_tokens": cache_write_tokens,
    }
    return Step("say", {"text": text, "chunks": chunks, "usage": usage})


def think() -> Step:
    """``agent.thinking`` (preceded by an ``event_start`` on streams that asked for its deltas)."""
    return Step("think")


def custom_tool(name: str, input: Json | None = None) -> Step:
    """``agent.custom_tool_use``; the session then waits for ``user.custom_tool_result``."""
    return Step("custom_tool", {"name": name, "input": input or {}})


def tool(
    name: str,
    input: Json | None = None,
    *,
    permission: Literal["ask", "allow", "deny"] = "ask",
    result: str = "ok",
) -> Step:
    """``agent.tool_use`` of a built-in tool with ``evaluated_permission``. ``allow``: it runs at once
    (``agent.tool_result`` with ``result``); ``ask``: the session waits for ``user.tool_confirmation``,
    and runs it only on ``allow``; ``deny``: it never runs."""
    return Step("tool", {"name": name, "input": input or {}, "permission": permission, "result": result})


def hosted_by_client(steps: Sequence[Step]) -> list[Step]:
    """``steps`` for a session in a ``self_hosted`` environment: its :func:`tool` calls wait for the
    client's ``user.tool_result`` instead of a scripted ``agent.tool_result``."""
    return [Step(s.kind, {**s.args, "self_hosted": True}) if s.kind == "tool" else s for s in steps]


def session_error(
    retry: Literal["retrying", "exhausted", "terminal"] = "retrying",
    *,
    error_type: str = "model_overloaded_error",
    message: str = "Overloaded",
) -> Step:
    """``session.error``. ``retrying``: then ``session.status_rescheduled`` and
    ``session.status_running``, and the turn goes on; ``exhausted``: idle with ``retries_exhausted``
    (the next message resumes the script); ``terminal``: ``session.status_terminated``, for good."""
    return Step("error", {"retry": retry, "type": error_type, "message": message})


def usage(**overrides: Any) -> Step:
    """``session.usage``: the cumulative snapshot of every request so far. ``overrides`` (e.g.
    ``active_seconds=12.5``, ``list_cost={"amount": "42", "currency": "USD"}``) stick to the
    session's usage from then on, as ``sessions.retrieve`` reports it."""
    return Step("usage", dict(overrides))


def end_turn() -> Step:
    """``session.status_idle`` with ``stop_reason`` ``end_turn``."""
    return stop("end_turn")


def stop(reason: Literal["end_turn", "refusal", "budget_reached"], *, details: Json | None = None) -> Step:
    """``session.status_idle`` with this ``stop_reason`` (``details`` become ``stop_details``)."""
    return Step("stop", {"reason": reason, "details": details})


def emit(event: Json) -> Step:
    """``event`` as is (an id and ``processed_at`` are added when missing): any type, known or not."""
    return Step("emit", {"event": dict(event)})


def raw_frame(data: bytes) -> Step:
    """``data`` written as it is to every open stream, never recorded: a frame that is not JSON, not
    UTF-8, or 10 MB long, as a broken or hostile remote sends it."""
    return Step("raw", {"data": bytes(data)})


def wait() -> Step:
    """Hold the turn until :meth:`ManagedAgentsFake.release` or a ``user.interrupt``."""
    return Step("wait")


class Host(Protocol):
    """What the agent needs from its session."""

    def new_id(self) -> str: ...
    def emit(self, event: Json) -> Json: ...
    def preview(self, event: Json, kind: str) -> None: ...
    def broadcast(self, data: bytes) -> None: ...
    def take(self, block: bool = True) -> list[Json] | None: ...
    def add_usage(self, model_usage: Json) -> None: ...
    def usage_snapshot(self, overrides: Json) -> Json: ...


_TOOLS: Final = ("custom_tool", "tool")
Outcome = Literal["go", "ended", "interrupted", "gone"]


class ScriptedAgent:
    """Performs a session's script; :meth:`run` is the session's worker thread."""

    def __init__(self, host: Host, steps: Sequence[Step]) -> None:
        self._host = host
        self._steps = deque(steps)
        self._pending: dict[str, Step] = {}  # tool-use event id -> its step, in order
        self._deferred: deque[list[Json]] = deque()
        self._results: set[str] = set()  # tool-use ids the client posted a user.tool_result for

    def run(self) -> None:
        """Until the session is closed: every batch of sent events with a ``user.message`` is a turn."""
        while True:
            batch = self._deferred.popleft() if self._deferred else self._host.take()
            if batch is None:
                return
            if any(e["type"] == "user.message" for e in batch) and self._turn() == "gone":
                return

    def _turn(self) -> Outcome:
        self._host.emit({"type": "session.status_running"})
        while True:
            step = self._steps.popleft() if self._steps else end_turn()
            outcome = self._settle() if step.kind not in _TOOLS else self._poll()
            if outcome == "go":
                outcome = self._do(step)
            if outcome == "interrupted":
                return self._interrupted(step)
            if outcome != "go":
                return outcome

    def _poll(self) -> Outcome:
        """Between steps: an interrupt already sent ends the turn; a message waits for the next."""
        while (batch := self._host.take(block=False)) is not None:
            if _has(batch, "user.interrupt"):
                return "interrupted"
            if _has(batch, "user.message"):
                self._deferred.append(batch)
        return "go"

    def _settle(self) -> Outcome:
        """Idle with ``requires_action`` until every pending tool call is answered, then running."""
        if (outcome := self._poll()) != "go" or not self._pending:
            return outcome
        answered: list[tuple[Step, Json]] = []
        self._idle({"type": "requires_action", "event_ids": list(self._pending)})
        while self._pending:
            batch = self._next()
            if isinstance(batch, str):
                return batch
            found = [(self._pending.pop(i), e) for e in batch if (i := _answers(e)) in self._pending]
            answered += found
            if found and self._pending:
                self._idle({"type": "requires_action", "event_ids": list(self._pending)})
        self._host.emit({"type": "session.status_running"})
        for step, answer in answered:
            allowed = step.kind == "tool" and answer.get("result") == "allow"
            if allowed and (outcome := self._run_tool(answer["tool_use_id"], step)) != "go":
                return outcome
        return "go"

    def _do(self, step: Step) -> Outcome:
        a = step.args
        if step.kind == "say":
            self._say(a["text"], a["chunks"], a["usage"])
        elif step.kind == "think":
            thinking = {"type": "agent.thinking", "id": self._host.new_id()}
            self._host.preview({"type": "event_start", "event": dict(thinking)}, "agent.thinking")
            self._host.emit(thinking)
        elif step.kind == "custom_tool":
            used = self._host.emit({"type": "agent.custom_tool_use", "name": a["name"], "input": a["input"]})
            self._pending[used["id"]] = step
        elif step.kind == "tool":
            used = self._host.emit(
                {
                    "type": "agent.tool_use",
                    "name": a["name"],
                    "input": a["input"],
                    "evaluated_permission": a["permission"],
                }
            )
            if a["permission"] == "ask":
                self._pending[used["id"]] = step
            elif a["permission"] == "allow":
                return self._run_tool(used["id"], step)
        elif step.kind == "error":
            return self._error(a)
        elif step.kind == "usage":
            self._host.emit({"type": "session.usage", "usage": self._host.usage_snapshot(dict(a))})
        elif step.kind == "stop":
            self._idle({"type": a["reason"]}, a["details"])
            return "ended"
        elif step.kind == "emit":
            self._host.emit(dict(a["event"]))
        elif step.kind == "raw":
            self._host.broadcast(a["data"])
        elif step.kind == "wait":
            return self._wait()
        return "go"

    def _say(self, text: str, chunks: int, model_usage: Json) -> None:
        start = self._host.emit({"type": "span.model_request_start"})
        message: Json = {
            "type": "agent.message",
            "id": self._host.new_id(),
            "content": [{"type": "text", "text": text}],
        }
        self._host.preview(
            {"type": "event_start", "event": {"type": "agent.message", "id": message["id"]}}, "agent.message"
        )
        for piece in _pieces(text, chunks):
            delta = {"type": "content_delta", "index": 0, "content": {"type": "text", "text": piece}}
            self._host.preview(
                {"type": "event_delta", "event_id": message["id"], "delta": delta}, "agent.message"
            )
        self._host.emit(message)
        self._host.add_usage(model_usage)
        self._host.emit(
            {
                "type": "span.model_request_end",
                "model_request_start_id": start["id"],
                "is_error": False,
                "model_usage": model_usage,
            }
        )

    def _error(self, a: Mapping[str, Any]) -> Outcome:
        error = {"type": a["type"], "message": a["message"], "retry_status": {"type": a["retry"]}}
        self._host.emit({"type": "session.error", "error": error})
        if a["retry"] == "retrying":
            self._host.emit({"type": "session.status_rescheduled"})
            self._host.emit({"type": "session.status_running"})
            return "go"
        if a["retry"] == "exhausted":
            self._idle({"type": "retries_exhausted"})
            return "ended"
        self._host.emit({"type": "session.status_terminated"})
        return "gone"

    def _next(self) -> list[Json] | Outcome:
        """The next batch of sent events, or how the wait for it ended: ``"gone"`` (the session
        closed) or ``"interrupted"``. A batch with a ``user.message`` is also kept for the turn
        after this one (messages queue behind the running turn)."""
        batch = self._host.take()
        if batch is None:
            return "gone"
        if _has(batch, "user.interrupt"):
            return "interrupted"
        if _has(batch, "user.message"):
            self._deferred.append(batch)
        return batch

    def _wait(self) -> Outcome:
        while True:
            batch = self._next()
            if isinstance(batch, str):
                return batch
            if _has(batch, RELEASE):
                return "go"

    def _interrupted(self, step: Step) -> Outcome:
        """The turn ends now: its remaining steps, up to its own end, are dropped."""
        while not _ends_turn(step) and self._steps:
            step = self._steps.popleft()
        self._pending.clear()
        self._idle({"type": "end_turn"})
        return "ended"

    def _idle(self, stop_reason: Json, details: Json | None = None) -> None:
        event: Json = {"type": "session.status_idle", "stop_reason": stop_reason}
        if details is not None:
            event["stop_details"] = details
        self._host.emit(event)

    def _run_tool(self, tool_use_id: str, step: Step) -> Outcome:
        """The call runs: here (a scripted result), or on the client's runner (self-hosted)."""
        if not step.args.get("self_hosted"):
            self._tool_result(tool_use_id, step)
            return "go"
        while tool_use_id not in self._results:
            batch = self._next()
            if isinstance(batch, str):
                return batch
            self._results.update(str(e.get("tool_use_id")) for e in batch if e["type"] == "user.tool_result")
        return "go"

    def _tool_result(self, tool_use_id: str, step: Step) -> None:
        content = [{"type": "text", "text": step.args["result"]}]
        self._host.emit(
            {"type": "agent.tool_result", "tool_use_id": tool_use_id, "content": content, "is_error": False}
        )


def _ends_turn(step: Step) -> bool:
    return step.kind == "stop" or (step.kind == "error" and step.args["retry"] != "retrying")


def _has(batch: list[Json], kind: str) -> bool:
    return any(e["type"] == kind for e in batch)


def _answers(event: Json) -> str | None:
    """The tool-use id a sent event answers, if it answers one."""
    if event["type"] == "user.custom_tool_result":
        return str(event.get("custom_tool_use_id"))
    if event["type"] == "user.tool_confirmation":
        return str(event.get("tool_use_id"))
    return None


def _pieces(text: str, chunks: int) -> list[str]:
    """``text`` in ``chunks`` near-equal pieces (at most one a character; none when empty)."""
    count = max(1, min(chunks, len(text)))
    size, extra = divmod(len(text), count)
    bounds = [i * size + min(i, extra) for i in range(count + 1)]
    return [text[a:b] for a, b in itertools.pairwise(bounds) if b > a]
