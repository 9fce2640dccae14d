"""``praisonai managed envs list|show|delete``: the hosted environments (Claude Managed Agents)
of the Anthropic key, through :mod:`praisonai.managed.hosted.admin`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import typer

from praisonai.cli import _output
from praisonai.cli._help import PlainCommand
from praisonai.cli._options import JsonOpt
from praisonai.cli.managed.cards import api_time, card, times
from praisonai.cli.managed.describe import clean

app = typer.Typer(
    help="Hosted environments (Claude Managed Agents): list, show, delete.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
EnvArg = Annotated[str, typer.Argument(metavar="ENV_ID", help="A hosted environment's id (env_…).")]


@app.command("list", cls=PlainCommand)
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
    rows = [
        (
            e["id"],
            clean(e["name"]),
            *_env_cells(e),
            api_time(e["updated_at"], short=True),
            bool(e["archived_at"]),
        )
        for e in found
    ]
    _output.table(("id", "name", "type", "networking", "packages", "updated", "archived"), rows)


@app.command("show", cls=PlainCommand)
def envs_show(env_id: EnvArg, json_: JsonOpt = False) -> None:
    """Show a hosted environment: its networking (allowed hosts) and packages per manager."""
    from praisonai.managed.hosted import admin

    e = admin.call(admin.show_environment, env_id)
    if json_:
        _output.print_json(e)
        return
    kind, networking, packages = _env_cells(e)
    hosts = ((e.get("config") or {}).get("networking") or {}).get("allowed_hosts") or []
    card(
        [
            ("env", f"{e['id']} ({clean(e['name'])}), {kind}"),
            ("network", networking + (f": {', '.join(hosts)}" if hosts else "")),
            ("packages", packages),
            ("about", clean(e.get("description") or "")),
            *times(e),
        ]
    )


@app.command("delete", cls=PlainCommand)
def envs_delete(env_id: EnvArg, json_: JsonOpt = False) -> None:
    """Delete a hosted environment (one already gone counts as deleted). Sessions made in it
    keep their containers; new sessions cannot use it."""
    from praisonai.managed.hosted import admin

    existed = admin.call(admin.delete_environment, env_id)
    if json_:
        _output.print_json({"id": env_id, "deleted": True, "existed": existed})
        return
    print(f"deleted {env_id}" if existed else f"{env_id} was already gone")


def _env_cells(e: Mapping[str, Any]) -> tuple[str, str, str]:
    """Type, networking and ``pip: a, b; apt: c`` of an environment."""
    config = e.get("config") or {}
    networking = str((config.get("networking") or {}).get("type") or "")
    packages = config.get("packages") or {}
    listed = "; ".join(f"{m}: {', '.join(p)}" for m, p in packages.items() if m != "type" and p)
    return str(config.get("type") or ""), networking, listed
