"""Session events, in the Claude Managed Agents vocabulary, for every backend.

A turn is a stream of :class:`Event`. Every event but the two ephemeral ones (``event_start``,
``event_delta``: streamed text, never stored) is appended to the session's log, which *is* the
transcript. The names and fields are Anthropic's (``agent.message``, ``agent.tool_use``,
``session.status_idle`` with a ``stop_reason`` …), so a hosted backend streams the same events and
one store, one renderer and one CLI serve both. Local-only events keep the same naming
(``sandbox.*``, ``session.resumed``, ``span.tool_end``).

``data`` holds the type's fields as the API's JSON would (see :data:`KNOWN_TYPES`); an event of an
unknown type is kept verbatim.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

#: Streamed only, never stored.
EPHEMERAL: Final = frozenset({"event_start", "event_delta"})

#: type -> its fields (documentation, and what the renderer knows).
KNOWN_TYPES: Final[Mapping[str, str]] = {
    "user.message": "content: [{type: text, text}]",
    "user.interrupt": "(none)",
    "user.tool_confirmation": "tool_use_id, result: allow|deny, deny_message?",
    "user.custom_tool_result": "custom_tool_use_id, content: [{type: text, text}], is_error",
    "agent.message": "content: [{type: text, text}], interrupted? (cut by interrupt()), "
    "partial? (the reply was cut or failed)",
    "agent.tool_use": "id (= the event's id), name, input, evaluated_permission: allow|ask|deny",
    "agent.custom_tool_use": "id, name, input",
    "agent.tool_result": "tool_use_id, content: [{type: text, text}], is_error, exit_code?, duration_s",
    "session.status_running": "(none)",
    "session.status_idle": "stop_reason: {type: end_turn|requires_action|retries_exhausted|"
    "budget_reached|max_turns|interrupted|refusal, event_ids?}",
    "session.error": "error: {type, message, retry_status: {type: retrying|exhausted|terminal}}",
    "span.model_request_start": "model",
    "span.model_request_end": "model_request_start_id, is_error, model_usage: {input_tokens, "
    "output_tokens, cache_read_input_tokens, cache_creation_input_tokens}",
    "sandbox.provisioned": "provider, instance_id",
    "sandbox.reattached": "provider, instance_id",
    "sandbox.resumed": "provider, instance_id (paused while idle, resumed with its files)",
    "sandbox.replaced": "provider, instance_id, previous_instance_id, lost: [...], kept: [...]",
    "session.resumed": "host, pid, lease_epoch",
    "remote.recreated": "kind: agent|environment, previous_id, remote_id, reason (hosted: the API had "
    "lost the resource, made again)",
    "event_start": "event: {type: agent.message, id}",
    "event_delta": "event_id, delta: {type: content_delta, content: {type: text, text}}",
}

_counter = 0


def new_id(prefix: str = "levt") -> str:
    """A sortable unique id: ``<prefix>_<ms time><random>`` (26 base-32 chars, like a ULID)."""
    global _counter
    _counter = (_counter + 1) & 0xFFFF
    value = (time.time_ns() // 1_000_000) << 80 | _counter << 64 | int.from_bytes(os.urandom(8), "big")
    alphabet = "0123456789abcdefghjkmnpqrstvwxyz"
    chars = []
    for _ in range(26):
        value, digit = divmod(value, 32)
        chars.append(alphabet[digit])
    return f"{prefix}_{''.join(reversed(chars))}"


@dataclass(frozen=True, slots=True)
class Event:
    """One session event: its ``type``, a unique ``id``, the type's fields in ``data``, and when
    it was processed (wall-clock seconds)."""

    type: str
    data: Mapping[str, Any] = field(default_factory=dict)
    id: str = field(default_factory=new_id)
    processed_at: float = field(default_factory=time.time)

    @property
    def ephemeral(self) -> bool:
        """Streamed only (a text delta), never stored."""
        return self.type in EPHEMERAL

    @property
    def text(self) -> str:
        """The text an ``agent.message``/``user.message``/``agent.tool_result`` carries, or a
        delta's text; ``""`` for other events."""
        if self.type == "event_delta":
            return str(self.data.get("delta", {}).get("content", {}).get("text", ""))
        return content_text(self.data.get("content"))

    @property
    def stop_reason(self) -> str | None:
        """The stop reason's type on ``session.status_idle``, else ``None``."""
        reason = self.data.get("stop_reason") if self.type == "session.status_idle" else None
        return str(reason.get("type")) if isinstance(reason, Mapping) else None

    def to_json(self) -> dict[str, Any]:
        """The event as one JSON object: ``{"type", "id", "processed_at", **data}``."""
        return {"type": self.type, "id": self.id, "processed_at": self.processed_at, **self.data}

    def dumps(self) -> str:
        return json.dumps(self.to_json(), separators=(",", ":"), default=str)

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> Event:
        """The inverse of :meth:`to_json` (unknown types and fields are kept)."""
        data = {k: v for k, v in value.items() if k not in ("type", "id", "processed_at")}
        return cls(str(value["type"]), data, str(value["id"]), float(value.get("processed_at") or 0.0))


def text_content(text: str) -> list[dict[str, str]]:
    """The API's content list for one text block."""
    return [{"type": "text", "text": text}]


def content_text(content: object) -> str:
    """The text blocks of an API content list (or a plain string), joined."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(
        str(b.get("text", "")) for b in content if isinstance(b, Mapping) and b.get("type") == "text"
    )


def idle(stop_reason: str, **fields: Any) -> Event:
    """``session.status_idle`` with ``stop_reason`` (plus e.g. ``event_ids=[...]``)."""
    return Event("session.status_idle", {"stop_reason": {"type": stop_reason, **fields}})


def delta(event_id: str, text: str) -> Event:
    """A streamed piece of the ``agent.message`` whose id is ``event_id``."""
    content = {"type": "text", "text": text}
    return Event(
        "event_delta", {"event_id": event_id, "delta": {"type": "content_delta", "content": content}}
    )
