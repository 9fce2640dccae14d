"""How a turn on a managed session ends, for either backend: :class:`ManagedResult`, the
session status each stop reason leaves (:data:`STATUS`), and the tool uses that wait for a
decision (:class:`ToolRequest`, :data:`Decision`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from praisonai.llm.types import Usage

__all__ = ["STATUS", "Decision", "ManagedResult", "ToolRequest"]

Decision = str | None  # "allow" | "deny" | None (left pending)
STATUS = {
    "end_turn": "idle",
    "requires_action": "requires_action",
    "budget_reached": "idle",
    "max_turns": "idle",
    "interrupted": "interrupted",
    "retries_exhausted": "error",
}


@dataclass(frozen=True)
class ToolRequest:
    """A tool use waiting for approval (what ``on_tool_confirmation`` is asked about)."""

    tool_use_id: str
    name: str
    input: Mapping[str, Any]
    session_id: str


@dataclass(frozen=True)
class ManagedResult:
    """How a turn ended: the final text, the stop reason, the session's status, this turn's usage,
    and the tool uses left waiting for approval (``requires_action``)."""

    text: str
    stop_reason: str
    status: str
    session_id: str
    usage: Usage
    pending: tuple[Mapping[str, Any], ...] = ()

    def __str__(self) -> str:
        return self.text
