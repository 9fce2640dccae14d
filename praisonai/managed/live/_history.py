"""The model's history, rebuilt from a session's event log (the transcript), in any process.

Each ``agent.message`` and the tool uses that follow it form one assistant message; each tool
result pairs with its call by the model's call id. A tool use with no result (the process died
under it, or it is still pending approval) is *open*: :func:`open_calls` lists them, so resume can
answer each (a synthetic "interrupted" result, or the approval it waits for) and the next model
request is well formed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from praisonai.llm.tools import ToolCall
from praisonai.llm.types import AssistantMessage, Message, ToolResult, UserMessage
from praisonai.managed.events import Event
from praisonai.managed.instance._source import REPLACED_NOTE

TOOL_USES = ("agent.tool_use", "agent.custom_tool_use")
TOOL_RESULTS = ("agent.tool_result", "user.custom_tool_result")


@dataclass
class _Builder:
    messages: list[Message] = field(default_factory=list)
    text: str = ""
    calls: list[ToolCall] = field(default_factory=list)
    open: bool = False

    def flush(self) -> None:
        if self.open:
            self.messages.append(AssistantMessage(self.text, tuple(self.calls)))
        self.text, self.calls, self.open = "", [], False

    def user(self, text: str) -> None:
        self.flush()
        append_user(self.messages, text)


def rebuild(events: Iterable[Event]) -> list[Message]:
    """The messages the events describe, in order (results of open calls are not invented here)."""
    b = _Builder()
    for ev in events:
        if ev.type == "user.message":
            b.user(ev.text)
        elif ev.type == "sandbox.replaced":
            b.user(REPLACED_NOTE)
        elif ev.type == "span.model_request_start":
            b.flush()
        elif ev.type == "agent.message":
            b.text, b.open = b.text + ev.text, True
        elif ev.type in TOOL_USES:
            b.calls.append(ToolCall(str(ev.data["call_id"]), str(ev.data["name"]), dict(ev.data["input"])))
            b.open = True
        elif ev.type in TOOL_RESULTS:
            b.flush()
            b.messages.append(ToolResult(str(ev.data["call_id"]), str(ev.data.get("name", "")), ev.text))
    b.flush()
    return b.messages


def open_calls(events: Iterable[Event]) -> list[Event]:
    """The tool-use events that have no result yet, in order."""
    uses: dict[str, Event] = {}
    for ev in events:
        if ev.type in TOOL_USES:
            uses[str(ev.data["call_id"])] = ev
        elif ev.type in TOOL_RESULTS:
            uses.pop(str(ev.data["call_id"]), None)
    return list(uses.values())


def append_user(messages: list[Message], text: str) -> None:
    """Add user text; text right after other user text joins it (the Messages API wants turns
    that alternate)."""
    if messages and isinstance(messages[-1], UserMessage):
        messages[-1] = UserMessage(f"{messages[-1].text}\n\n{text}")
    else:
        messages.append(UserMessage(text))


def result_event(use: Event, content: str, *, is_error: bool, **extra: Any) -> Event:
    """The result event answering tool-use event ``use``."""
    kind = "user.custom_tool_result" if use.type == "agent.custom_tool_use" else "agent.tool_result"
    key = "custom_tool_use_id" if kind == "user.custom_tool_result" else "tool_use_id"
    data = {
        key: use.id,
        "call_id": use.data["call_id"],
        "name": use.data["name"],
        "content": [{"type": "text", "text": content}],
        "is_error": is_error,
        **extra,
    }
    return Event(kind, data)
