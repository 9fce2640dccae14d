"""``praisonai managed agents list|show|update|archive``: the agents in the store (a name, a
config, its versions) and the hosted agents of the Anthropic key (``ANTHROPIC_API_KEY``;
``ANTHROPIC_BASE_URL`` points the client elsewhere).

The hosted calls are :mod:`praisonai.managed.hosted.admin`'s (each sent once; a failure is one
sentence, which the entry point prints as one line). Nothing of the SDK is imported before a
command runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import typer

from praisonai._errors import ConfigError
from praisonai.cli import _output
from praisonai.cli._help import PlainCommand
from praisonai.cli._options import JsonOpt
from praisonai.cli.managed import records
from praisonai.cli.managed.cards import api_time, card, first_line, model_of, times
from praisonai.cli.managed.describe import clean

app = typer.Typer(
    help="Stored agents (a name, a config, its versions), and hosted agents: list, show, update, archive.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
AgentIdArg = Annotated[str, typer.Argument(metavar="AGENT_ID", help="A hosted agent's id (agent_…).")]
_TEXT_FIELDS = ("name", "model", "system", "description")


@app.command("list", cls=PlainCommand)
def agents_list(
    remote: Annotated[
        bool, typer.Option("--remote", help="The Anthropic key's hosted agents (ANTHROPIC_API_KEY) instead.")
    ] = False,
    include_archived: Annotated[
        bool, typer.Option("--include-archived", help="With --remote: archived agents too.")
    ] = False,
    json_: JsonOpt = False,
) -> None:
    """List stored agents: each name's versions, with their model and config hash; with
    --remote, the API's agents at their latest versions."""
    from praisonai.managed import sessions

    if remote:
        _remote_list(include_archived, as_json=json_)
        return
    _output.table(*records.agents_table(sessions.list_agents(), as_json=json_), as_json=json_)


def _remote_list(include_archived: bool, *, as_json: bool) -> None:
    """The key's hosted agents, each at its latest version."""
    from praisonai.managed.hosted import admin

    found = admin.call(admin.list_agents, include_archived)
    if as_json:
        _output.print_json(found)
        return
    rows = [
        (
            a["id"],
            clean(a["name"]),
            a["version"],
            model_of(a),
            api_time(a["updated_at"], short=True),
            bool(a["archived_at"]),
        )
        for a in found
    ]
    _output.table(("id", "name", "version", "model", "updated", "archived"), rows)


@app.command("show", cls=PlainCommand)
def agent_show(
    agent_id: AgentIdArg,
    version: Annotated[int | None, typer.Option("--version", metavar="N", help="This version.")] = None,
    json_: JsonOpt = False,
) -> None:
    """Show a hosted agent (its latest version, or --version N): model, system prompt, tools."""
    from praisonai.managed.hosted import admin

    _agent_out(admin.call(admin.show_agent, agent_id, version), json_)


@app.command("update", cls=PlainCommand)
def agent_update(
    agent_id: AgentIdArg,
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
    print(_output.safe(f"updated {agent['id']}: version {agent['version']} (was {version})"))


@app.command("archive", cls=PlainCommand)
def agent_archive(agent_id: AgentIdArg, json_: JsonOpt = False) -> None:
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
    card(
        [
            ("agent", f"{a['id']} ({clean(a['name'])}), version {a['version']}"),
            ("model", model_of(a)),
            ("about", clean(a.get("description") or "")),
            ("system", first_line(a.get("system") or "")),
            ("tools", ", ".join(tools)),
            ("metadata", ", ".join(f"{k}={v}" for k, v in (a.get("metadata") or {}).items())),
            *times(a),
        ]
    )
