"""``praisonai managed agents show|update|archive``, ``managed envs list|show|delete``, and the
``--remote`` of ``sessions list`` and ``agents list``: the hosted resources of the Anthropic key
(``ANTHROPIC_API_KEY``; ``ANTHROPIC_BASE_URL`` points the client elsewhere).

The calls are :mod:`praisonai.managed.hosted.admin`'s (each sent once; a failure is one
sentence, which the entry point prints as one line). Nothing of the SDK is imported before a
command runs.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any

import typer

from praisonai._errors import ConfigError
from praisonai.cli import _output
from praisonai.cli._app import PlainCommand
from praisonai.cli._managed_render import clean
from praisonai.cli._options import JsonOpt

if TYPE_CHECKING:
    from praisonai.managed.hosted.admin import RemoteSession
    from praisonai.managed.store import AgentRecord, SessionRecord

envs_app = typer.Typer(help="Hosted environments (Claude Managed Agents): list, show, delete.",
                       no_args_is_help=True, rich_markup_mode=None)  # fmt: skip
AgentArg = Annotated[str, typer.Argument(metavar="AGENT_ID", help="A hosted agent's id (agent_…).")]
EnvArg = Annotated[str, typer.Argument(metavar="ENV_ID", help="A hosted environment's id (env_…).")]
_TEXT_FIELDS = ("name", "model", "system", "description")


def register(agents_app: typer.Typer) -> typer.Typer:
    """Add ``show``, ``update`` and ``archive`` to ``managed agents`` (after its ``list``, for
    the help's order); returns the ``envs`` group, for ``managed`` to add."""
    agents_app.command("show", cls=PlainCommand)(agent_show)
    agents_app.command("update", cls=PlainCommand)(agent_update)
    agents_app.command("archive", cls=PlainCommand)(agent_archive)
    return envs_app


# ---- sessions list --remote, agents list --remote -----------------------------------------------


def sessions_list(found: Sequence[SessionRecord], agents: Mapping[str, AgentRecord], limit: int,
                  status: str | None, *, as_json: bool) -> None:  # fmt: skip
    """The stored sessions beside the API's, each local one with its remote session (and that
    one's status now); the remote sessions no stored session records (in ``status``, when
    given) are listed after them, flagged ``no local record``."""
    from praisonai.cli import _managed_records as records
    from praisonai.managed.hosted import admin

    remote = admin.call(admin.list_remote_sessions, limit)
    by_id = {r.id: r for r in remote}
    untracked = [r for r in _untracked(remote) if status in (None, r.status)]
    if as_json:
        columns, rows = records.sessions_table(found, agents, as_json=True)
        local = [dict(zip(columns, row, strict=True)) for row in rows]
        for item, s in zip(local, found, strict=True):
            mate = by_id.get(s.remote_session_id or "")
            item.update(local=True, remote_session_id=s.remote_session_id,
                        remote_status=mate.status if mate else None)  # fmt: skip
        _output.print_json([*local, *(_untracked_json(r) for r in untracked)])
        return
    _, rows = records.sessions_table(found, agents, as_json=False)  # id, agent, status, turns, updated, title
    table = [(r[0], r[1], r[2], r[4], _remote_cell(s.remote_session_id, by_id), r[5])
             for r, s in zip(rows, found, strict=True)]  # fmt: skip
    table += [(r.id, f"{clean(r.agent_name)}@{r.agent_version}", r.status, _at(r.updated_at, short=True),
               "no local record", clean(r.title or "")) for r in untracked]  # fmt: skip
    _output.table(("id", "agent", "status", "updated", "remote", "title"), table)
    if untracked:
        _output.note(f"{len(untracked)} remote session(s) with no local record (made elsewhere, or "
                     "their local session was deleted)")  # fmt: skip


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
        r for r in remote
        if r.id not in known and not (r.praisonai_session in ids and ids[r.praisonai_session] in (None, r.id))
    ]  # fmt: skip


def _remote_cell(remote_id: str | None, by_id: Mapping[str, RemoteSession]) -> str:
    if not remote_id:
        return ""
    mate = by_id.get(remote_id)
    return f"{remote_id} ({mate.status})" if mate else remote_id


def _untracked_json(r: RemoteSession) -> dict[str, Any]:
    return {"id": None, "local": False, "remote_session_id": r.id, "remote_status": r.status,
            "agent": r.agent_name, "agent_id": r.agent_id, "agent_version": r.agent_version,
            "title": r.title, "praisonai_session": r.praisonai_session, "archived": r.archived,
            "created_at": _epoch(r.created_at), "updated_at": _epoch(r.updated_at)}  # fmt: skip


def agents_list(include_archived: bool, *, as_json: bool) -> None:
    """The key's hosted agents, each at its latest version."""
    from praisonai.managed.hosted import admin

    found = admin.call(admin.list_agents, include_archived)
    if as_json:
        _output.print_json(found)
        return
    rows = [(a["id"], clean(a["name"]), a["version"], _model(a), _at(a["updated_at"], short=True),
             bool(a["archived_at"])) for a in found]  # fmt: skip
    _output.table(("id", "name", "version", "model", "updated", "archived"), rows)


# ---- agents show|update|archive -----------------------------------------------------------------


def agent_show(
    agent_id: AgentArg,
    version: Annotated[int | None, typer.Option("--version", metavar="N", help="This version.")] = None,
    json_: JsonOpt = False,
) -> None:
    """Show a hosted agent (its latest version, or --version N): model, system prompt, tools."""
    from praisonai.managed.hosted import admin

    _agent_out(admin.call(admin.show_agent, agent_id, version), json_)


def agent_update(
    agent_id: AgentArg,
    version: Annotated[
        int, typer.Option("--version", metavar="N", help="The version you change (the current one).")
    ],
    name: Annotated[str | None, typer.Option("--name", metavar="NAME", help="A new name.")] = None,
    model: Annotated[str | None, typer.Option("--model", "-m", metavar="MODEL", help="A new model.")] = None,
    system: Annotated[
        str | None, typer.Option("--system", "-s", metavar="TEXT", help="A new system prompt.")
    ] = None,
    description: Annotated[
        str | None, typer.Option("--description", metavar="TEXT", help="A new description.")
    ] = None,
    json_: JsonOpt = False,
) -> None:
    """Make a new version of a hosted agent. --version is the version the change is made
    against: when someone made another since, nothing changes and the command says so (exit 1).
    Sessions keep the version they started with."""
    from praisonai.managed.hosted import admin

    values = (name, model, system, description)
    fields = {k: v for k, v in zip(_TEXT_FIELDS, values, strict=True) if v is not None}
    if not fields:
        raise ConfigError("nothing to update: give --name, --model, --system or --description")
    agent = admin.call(admin.update_agent, agent_id, version, **fields)
    if json_:
        _output.print_json(agent)
        return
    print(f"updated {agent['id']}: version {agent['version']} (was {version})")


def agent_archive(agent_id: AgentArg, json_: JsonOpt = False) -> None:
    """Archive a hosted agent, for good: new sessions may no longer use it (the API has no
    delete); its sessions keep running."""
    from praisonai.managed.hosted import admin

    agent = admin.call(admin.archive_agent, agent_id)
    if json_:
        _output.print_json(agent)
        return
    print(f"archived {agent['id']} ({clean(agent['name'])}, version {agent['version']})")


def _agent_out(a: Mapping[str, Any], as_json: bool) -> None:
    if as_json:
        _output.print_json(a)
        return
    tools = [str(t.get("name") or t.get("mcp_server_name") or t.get("type")) for t in a.get("tools") or ()]
    _card([
        ("agent", f"{a['id']} ({clean(a['name'])}), version {a['version']}"),
        ("model", _model(a)),
        ("about", clean(a.get("description") or "")),
        ("system", _first_line(a.get("system") or "")),
        ("tools", ", ".join(tools)),
        ("metadata", ", ".join(f"{k}={v}" for k, v in (a.get("metadata") or {}).items())),
        *_times(a),
    ])  # fmt: skip


# ---- envs ---------------------------------------------------------------------------------------


@envs_app.command("list", cls=PlainCommand)
def envs_list(
    include_archived: Annotated[bool, typer.Option("--include-archived", help="Archived ones too.")] = False,
    json_: JsonOpt = False,
) -> None:
    """List the key's hosted environments: type, networking, packages."""
    from praisonai.managed.hosted import admin

    found = admin.call(admin.list_environments, include_archived)
    if json_:
        _output.print_json(found)
        return
    rows = [(e["id"], clean(e["name"]), *_env_cells(e), _at(e["updated_at"], short=True),
             bool(e["archived_at"])) for e in found]  # fmt: skip
    _output.table(("id", "name", "type", "networking", "packages", "updated", "archived"), rows)


@envs_app.command("show", cls=PlainCommand)
def envs_show(env_id: EnvArg, json_: JsonOpt = False) -> None:
    """Show a hosted environment: its networking (allowed hosts) and packages per manager."""
    from praisonai.managed.hosted import admin

    e = admin.call(admin.show_environment, env_id)
    if json_:
        _output.print_json(e)
        return
    kind, networking, packages = _env_cells(e)
    hosts = ((e.get("config") or {}).get("networking") or {}).get("allowed_hosts") or []
    _card([
        ("env", f"{e['id']} ({clean(e['name'])}), {kind}"),
        ("network", networking + (f": {', '.join(hosts)}" if hosts else "")),
        ("packages", packages), ("about", clean(e.get("description") or "")),
        *_times(e),
    ])  # fmt: skip


@envs_app.command("delete", cls=PlainCommand)
def envs_delete(env_id: EnvArg, json_: JsonOpt = False) -> None:
    """Delete a hosted environment (one already gone counts as deleted). Sessions made in it
    keep their containers; new sessions cannot use it."""
    from praisonai.managed.hosted import admin

    existed = admin.call(admin.delete_environment, env_id)
    if json_:
        _output.print_json({"id": env_id, "deleted": True, "existed": existed})
        return
    print(f"deleted {env_id}" if existed else f"{env_id} was already gone")


# ---- pieces -------------------------------------------------------------------------------------


def _env_cells(e: Mapping[str, Any]) -> tuple[str, str, str]:
    """Type, networking and ``pip: a, b; apt: c`` of an environment."""
    config = e.get("config") or {}
    networking = str((config.get("networking") or {}).get("type") or "")
    packages = config.get("packages") or {}
    listed = "; ".join(f"{m}: {', '.join(p)}" for m, p in packages.items() if m != "type" and p)
    return str(config.get("type") or ""), networking, listed


def _model(a: Mapping[str, Any]) -> str:
    model = a.get("model")
    return str(model.get("id") if isinstance(model, Mapping) else model or "")


def _times(obj: Mapping[str, Any]) -> list[tuple[str, Any]]:
    return [(name, _at(obj.get(f"{name}_at"))) for name in ("created", "updated", "archived")]


def _first_line(text: str) -> str:
    lines = clean(text).strip().splitlines()
    return lines[0] + (f"  (+{len(lines) - 1} more lines)" if len(lines) > 1 else "") if lines else ""


def _at(stamp: str | None, *, short: bool = False) -> str:
    """An API timestamp in local time, as the stored records show theirs."""
    from praisonai.cli._managed_records import when

    at = _epoch(stamp)
    return when(at, short=short) if at is not None else stamp or ""


def _epoch(stamp: str | None) -> float | None:
    """An API timestamp (ISO 8601, ``Z`` for UTC) in seconds since the epoch, as the store keeps
    its own (``None`` when there is none, or it does not parse)."""
    from datetime import datetime

    try:
        return datetime.fromisoformat((stamp or "").replace("Z", "+00:00")).timestamp()  # 3.10 reads no Z
    except ValueError:
        return None


def _card(lines: Sequence[tuple[str, Any]]) -> None:
    for field, value in lines:
        if value:
            sys.stdout.write(f"{field:<8} {value}\n")
    sys.stdout.flush()
