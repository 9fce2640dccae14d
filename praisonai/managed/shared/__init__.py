"""SharedCompute: one remote instance shared by a team of agents, and the four tools each agent
gets on it (see :mod:`praisonai.managed.shared._compute`). Nothing else in ``managed`` needs
them."""

from praisonai.managed.shared._compute import (
    BRIDGED_TOOL_NAMES,
    CAPABILITY_PROMPT,
    SESSIONLESS_NOTE,
    AuditEntry,
    SharedCompute,
    check_place,
)

__all__ = [
    "BRIDGED_TOOL_NAMES",
    "CAPABILITY_PROMPT",
    "SESSIONLESS_NOTE",
    "AuditEntry",
    "SharedCompute",
    "check_place",
]
