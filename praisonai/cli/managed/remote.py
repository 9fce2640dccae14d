"""``praisonai managed sessions list --remote``: the stored sessions beside the API's (the
Anthropic key's, ``ANTHROPIC_API_KEY``), and the remote sessions no stored session records."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from praisonai.cli import _output
from praisonai.cli.managed import records
from praisonai.cli.managed.cards import api_time, epoch
from praisonai.cli.managed.describe import clean

if TYPE_CHECKING:
    from praisonai.managed.hosted.admin import RemoteSession
    from praisonai.managed.store import AgentRecord, SessionRecord


def list_with_remote(
    found: Sequence[SessionRecord],
    agents: Mapping[str, AgentRecord],
    limit: int,
    status: str | None,
    *,
    as_json: bool,
) -> None:
    """The stored sessions beside the API's, each local one with its remote session (and that
    one's status now); the remote sessions no stored session records (in ``status``, when
    given) are listed after them, flagged ``no local record``."""
    from praisonai.managed.hosted import admin

    remote = admin.call(admin.list_remote_sessions, limit)
    by_id = {r.id: r for r in remote}
    untracked = [r for r in _untracked(remote) if status in (None, r.status)]
    if as_json:
        columns, rows = records.sessions_table(found, agents, as_json=True)
        local = [dict(zip(columns, row, strict=True)) for row in rows]
        for item, s in zip(local, found, strict=True):
            mate = by_id.get(s.remote_session_id or "")
            item.update(
                local=True, remote_session_id=s.remote_session_id, remote_status=mate.status if mate else None
            )
        _output.print_json([*local, *(_untracked_json(r) for r in untracked)])
        return
    _, rows = records.sessions_table(found, agents, as_json=False)  # id, agent, status, turns, updated, title
    table = [
        (r[0], r[1], r[2], r[4], _remote_cell(s.remote_session_id, by_id), r[5])
        for r, s in zip(rows, found, strict=True)
    ]
    table += [
        (
            r.id,
            f"{clean(r.agent_name)}@{r.agent_version}",
            r.status,
            api_time(r.updated_at, short=True),
            "no local record",
            clean(r.title or ""),
        )
        for r in untracked
    ]
    _output.table(("id", "agent", "status", "updated", "remote", "title"), table)
    if untracked:
        _output.note(
            f"{len(untracked)} remote session(s) with no local record (made elsewhere, or "
            "their local session was deleted)"
        )


def _untracked(remote: Sequence[RemoteSession]) -> list[RemoteSession]:
    """The remote sessions no stored session records, by their id or by the local id their
    metadata tag names: asked of the whole store, not of the listed page."""
    from praisonai._limits import MAX_SESSIONS_LISTED
    from praisonai.managed.store import open_store

    with open_store() as store:
        stored = store.list_sessions(limit=MAX_SESSIONS_LISTED)
    ids = {s.id: s.remote_session_id for s in stored}
    known = {s.remote_session_id for s in stored if s.remote_session_id}
    return [
        r
        for r in remote
        if r.id not in known and not (r.praisonai_session in ids and ids[r.praisonai_session] in (None, r.id))
    ]


def _remote_cell(remote_id: str | None, by_id: Mapping[str, RemoteSession]) -> str:
    if not remote_id:
        return ""
    mate = by_id.get(remote_id)
    return f"{remote_id} ({mate.status})" if mate else remote_id


def _untracked_json(r: RemoteSession) -> dict[str, Any]:
    return {
        "id": None,
        "local": False,
        "remote_session_id": r.id,
        "remote_status": r.status,
        "agent": r.agent_name,
        "agent_id": r.agent_id,
        "agent_version": r.agent_version,
        "title": r.title,
        "praisonai_session": r.praisonai_session,
        "archived": r.archived,
        "created_at": epoch(r.created_at),
        "updated_at": epoch(r.updated_at),
    }
