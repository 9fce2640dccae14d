"""How ``praisonai managed`` prints stored records: sessions (a table, a card, JSON), agents, and
the usage of each turn. Tables go through :func:`praisonai.cli._output.table`; this module only
chooses the columns and words, and imports nothing heavy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from praisonai._times import when
from praisonai.cli import _output
from praisonai.cli.managed.describe import describe, describe_usage, recreated_line

if TYPE_CHECKING:
    from praisonai.managed.sessions import SessionView
    from praisonai.managed.store import AgentRecord, SessionRecord, TurnUsage

Table = tuple[tuple[str, ...], list[tuple[Any, ...]]]


def sessions_table(
    found: Sequence[SessionRecord], agents: Mapping[str, AgentRecord], *, as_json: bool
) -> Table:
    """A row per session. JSON keeps every field apart; the table folds the stop reason and the
    pending count into the status (the usage is in ``sessions show``)."""
    if as_json:  # the library's row: the dashboard lists the same
        from praisonai.managed.sessions import session_row

        rows = [session_row(s, agents.get(s.agent_id)) for s in found]
        return (tuple(rows[0]) if rows else ("id",)), [tuple(row.values()) for row in rows]
    return ("id", "agent", "status", "turns", "updated", "title"), [
        (
            s.id,
            _agent_label(agents.get(s.agent_id), s),
            _status(s),
            s.turns,
            when(s.updated_at, short=True),
            s.title or "",
        )
        for s in found
    ]


def session_card(view: SessionView, out: TextIO) -> None:
    """The session as ``field  value`` lines: what it is, where it stands, what it used."""
    from praisonai.managed.store import lease_holder

    s, agent = view.record, view.agent
    model = agent.config.get("model") or "?"
    lines = [
        ("session", s.id + (f" (remote {s.remote_session_id})" if s.remote_session_id else "")),
        ("agent", f"{_agent_label(agent, s)} ({s.agent_id}), {s.backend}, model {model}"),
        ("remote", _remote_line(view.remote)) if view.remote else None,
        *(("remade", recreated_line(note)) for note in view.remote.get("recreated") or ()),
        ("title", s.title) if s.title else None,
        ("forked", f"from {f['session_id']} at turn {f['at_turn']}")
        if (f := s.metadata.get("forked_from"))
        else None,
        ("status", _status(s)),
        *(("pending", _pending(p)) for p in s.pending),
        ("error", _error(s.last_error)) if s.last_error else None,
        ("sandbox", _sandbox_line(s)),
        ("turns", str(s.turns)),
        ("usage", describe_usage(s.usage)),
        ("billed", billed) if (billed := _billed(view.remote.get("usage"))) else None,
        ("created", when(s.created_at)),
        ("updated", when(s.updated_at)),
        ("lease", f"held by {holder}") if (holder := lease_holder(s)) else None,
    ]
    for field, value in filter(None, lines):
        out.write(f"{field:<8} {_output.safe(value)}\n")
    out.flush()


def session_summary(view: SessionView) -> str:
    """One line naming a session, for a question about it."""
    s = view.record
    title = f" {s.title!r}" if s.title else ""
    remote = f"remote {s.remote_session_id}; " if s.remote_session_id else ""
    return f"{s.id}{title} ({s.status}; {remote}{_sandbox_line(s)})"


def turns_table(turns: Sequence[TurnUsage]) -> Table:
    """Usage per turn and model, cache tokens included."""
    return ("turn", "model", "requests", "input", "output", "cache read", "cache write"), [
        (
            t.turn,
            t.model,
            t.requests,
            t.input_tokens,
            t.output_tokens,
            t.cache_read_input_tokens,
            t.cache_creation_input_tokens,
        )
        for t in turns
    ]


def agents_table(agents: Sequence[AgentRecord], *, as_json: bool) -> Table:
    """A row per stored agent version."""
    if as_json:
        columns = ("id", "name", "version", "backend", "model", "config_hash", "created_at")
        return columns, [
            (a.id, a.name, a.version, a.backend, a.config.get("model"), a.config_hash, a.created_at)
            for a in agents
        ]
    return ("id", "name", "version", "backend", "model", "config", "created"), [
        (
            a.id,
            a.name,
            a.version,
            a.backend,
            a.config.get("model") or "",
            a.config_hash[:12],
            when(a.created_at, short=True),
        )
        for a in agents
    ]


# ---- pieces ----------------------------------------------------------------------------------


def _agent_label(agent: AgentRecord | None, s: SessionRecord) -> str:
    return f"{agent.name if agent else s.agent_id}@{s.agent_version}"


def _status(s: SessionRecord) -> str:
    """``idle (end_turn)``, ``requires_action (1 pending)``, ``running``."""
    from praisonai.managed.sessions import stop_type

    stop = stop_type(s)
    detail = [stop] if stop and stop != s.status else []
    if s.pending:
        detail.append(f"{len(s.pending)} pending")
    return f"{s.status} ({', '.join(detail)})" if detail else s.status


def _pending(item: Mapping[str, Any]) -> str:
    ref = item.get("event_id") or item.get("tool_use_id") or item.get("id") or "?"
    return f"{describe(str(item.get('name', '?')), item.get('input'))}  [{ref}]"


def _error(error: Mapping[str, Any]) -> str:
    retry = (error.get("retry_status") or {}).get("type")
    kind = f"{error.get('type')}: " if error.get("type") else ""
    return f"{kind}{error.get('message', '')}" + (f" ({retry})" if retry else "")


def _remote_line(remote: Mapping[str, Any]) -> str:
    """``agent agent_…@2, environment env_…, idle``: the remote session as last recorded."""
    agent = remote.get("agent") or {}
    parts = [
        f"agent {agent.get('id')}@{agent.get('version')}" if agent.get("id") else None,
        f"environment {remote['environment_id']}" if remote.get("environment_id") else None,
        str(remote["status"]) if remote.get("status") else None,
    ]
    return ", ".join(filter(None, parts)) or "recorded"


def _billed(usage: Any) -> str:
    """What the API reported that the local counters do not hold: cache writes by lifetime, the
    list cost and the active seconds (each only when reported)."""
    if not isinstance(usage, Mapping):
        return ""
    parts = []
    cache = usage.get("cache_creation") or {}
    if cache:
        parts.append(
            f"cache written {int(cache.get('ephemeral_5m_input_tokens') or 0)} for 5m, "
            f"{int(cache.get('ephemeral_1h_input_tokens') or 0)} for 1h"
        )
    cost = usage.get("list_cost") or {}
    if cost.get("amount") is not None:
        cents = int(cost["amount"])  # minor units, as a string: "2500" is 25.00
        parts.append(f"list cost {cents // 100}.{cents % 100:02d} {cost.get('currency') or ''}".rstrip())
    if usage.get("active_seconds") is not None:
        parts.append(f"{float(usage['active_seconds']):g} s active")
    return "; ".join(parts)


def _sandbox_line(s: SessionRecord) -> str:
    from praisonai.managed.sessions import sandbox_of

    box = sandbox_of(s)
    if not box:
        return "no instance"
    status = f" ({s.sandbox_status})" if s.sandbox_status else ""
    return f"{box['provider']} {box['instance_id']}{status}"
