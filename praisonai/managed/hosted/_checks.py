"""Whether an event from the Managed Agents API has the shape the turn reads: :func:`problem`.

The SDK builds its event models without validation, so a field of the wrong type would surface
later as a ``TypeError`` deep in the turn, or be stored as it came. Only what the turn and the
transcript read is checked (the rest is kept verbatim: the API adds fields): the type, the id,
``processed_at``, and per type the fields the turn acts on. A type outside the API's namespaces
is not an event of this API; a new type inside them (``session.something_new``) is kept and
shown as it is, so a new API release does not break a turn.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final

from praisonai._limits import MAX_REMOTE_EVENT_BYTES

#: Prefixes of the API's event types (``managed-agents.md`` a.4), and the two stream previews.
NAMESPACES: Final = ("user.", "agent.", "session.", "span.", "system.", "workflow_run.")
PREVIEWS: Final = ("event_start", "event_delta")
_TYPE: Final = re.compile(r"[a-z][a-z0-9_]*(\.[a-z0-9_]+)+")
_STAMP: Final = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?([Zz]|[+-]\d\d:\d\d)")
_TOOL_USES: Final = ("agent.tool_use", "agent.mcp_tool_use", "agent.custom_tool_use")
_CONTENT: Final = ("user.message", "agent.message", "agent.tool_result", "agent.mcp_tool_result",
                   "user.custom_tool_result", "user.tool_result")  # fmt: skip
#: type -> (field, the Python types it may have) for the fields the turn reads.
_FIELDS: Final[Mapping[str, tuple[tuple[str, type | tuple[type, ...]], ...]]] = {
    "session.status_idle": (("stop_reason", dict),),
    "session.error": (("error", dict),),
    "span.model_request_end": (("model_usage", dict),),
    "session.usage": (("usage", dict),),
    "event_delta": (("event_id", str), ("delta", dict)),
    "event_start": (("event", dict),),
    "user.tool_confirmation": (("tool_use_id", str),),
    "user.custom_tool_result": (("custom_tool_use_id", str),),
    **{kind: (("name", str), ("input", dict)) for kind in _TOOL_USES},
    **{kind: (("content", list),) for kind in _CONTENT},
}


def problem(raw: Mapping[str, Any]) -> str | None:
    """What is wrong with ``raw`` (an event as the API sent it), in a few words; None when fine."""
    kind = raw.get("type")
    if not isinstance(kind, str):
        return f"an event whose type is {_shown(kind)}, not a string"
    if kind not in PREVIEWS and not (_TYPE.fullmatch(kind) and kind.startswith(NAMESPACES)):
        return f"an event of type {_shown(kind)}, which is not a Managed Agents event type"
    said = f"a {_shown(kind)} event"
    if kind not in PREVIEWS and not isinstance(raw.get("id"), str):
        return f"{said} whose id is {_shown(raw.get('id'))}, not a string"
    stamp = raw.get("processed_at")
    if stamp is not None and not (isinstance(stamp, str) and _STAMP.fullmatch(stamp)):
        return f"{said} whose processed_at is {_shown(stamp)}, not an RFC 3339 time"
    for field, allowed in _FIELDS.get(kind, ()):
        value = raw.get(field)
        if value is not None and not isinstance(value, allowed):
            return f"{said} whose {field} is {_shown(value)}, not {_name(allowed)}"
    return _nested(kind, raw, said)


def _nested(kind: str, raw: Mapping[str, Any], said: str) -> str | None:
    """The nested fields the turn reads: the stop reason's type and ids, the error's retry status,
    the usage counters, the content blocks."""
    if kind == "session.status_idle" and isinstance(reason := raw.get("stop_reason"), dict):
        ids = reason.get("event_ids")
        if not isinstance(reason.get("type"), str) or not (ids is None or _strings(ids)):
            return f"{said} whose stop_reason is {_shown(reason)}, not {{type, event_ids?}}"
    if kind == "session.error" and isinstance(error := raw.get("error"), dict):
        status = error.get("retry_status")
        if not (status is None or (isinstance(status, dict) and isinstance(status.get("type"), str))):
            return f"{said} whose error.retry_status is {_shown(status)}, not {{type}}"
    for field in ("model_usage", "usage"):
        counts = raw.get(field)
        if isinstance(counts, dict):
            bad = next((k for k, v in counts.items() if k.endswith("tokens") and not _count(v)), None)
            if bad is not None:
                return f"{said} whose {field}.{bad} is {_shown(counts[bad])}, not a count"
    blocks = raw.get("content")
    if isinstance(blocks, list) and not all(isinstance(b, dict) for b in blocks):
        return f"{said} whose content holds {_shown(blocks)}, not content blocks"
    return None


def oversized(raw: Mapping[str, Any]) -> str | None:
    """``raw`` is larger than ``MAX_REMOTE_EVENT_BYTES`` once encoded (a listed event: a streamed
    one was refused while it arrived)."""
    size = len(json.dumps(raw, separators=(",", ":")).encode())
    if size <= MAX_REMOTE_EVENT_BYTES:
        return None
    most = MAX_REMOTE_EVENT_BYTES / 2**20
    return f"an event of {size / 2**20:.1f} MiB, larger than {most:g} MiB (the most praisonai takes)"


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _count(value: object) -> bool:
    return value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= 0)


def _name(allowed: type | tuple[type, ...]) -> str:
    names = {"dict": "an object", "str": "a string", "list": "a list"}
    kinds = allowed if isinstance(allowed, tuple) else (allowed,)
    return " or ".join(names.get(k.__name__, k.__name__) for k in kinds)


def _shown(value: object) -> str:
    """``value`` as JSON, cut to 60 characters (a message never quotes a whole event)."""
    text = json.dumps(value, default=repr, ensure_ascii=True)
    return text if len(text) <= 60 else text[:57] + "..."
