"""``praisonai managed …``: a managed agent's turns from the command line, and the sessions they
leave in the store under ``PRAISONAI_HOME`` (list, show, resume from any terminal, delete); the
hosted agents and environments of the Anthropic key are :mod:`praisonai.cli._managed_hosted`'s.

The loop, the store and the sessions are the library's (:mod:`praisonai.managed`); these commands
parse their arguments, answer tool confirmations, turn Ctrl-C into an interrupt, and print
(:mod:`praisonai.cli._managed_render`). ``ps`` and ``stop`` are ``praisonai compute ps/stop`` under
the names PraisonAI's users know. Nothing heavy is imported before a command runs.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from praisonai._errors import ConfigError, SessionBusyError
from praisonai.cli import _managed_hosted as hosted
from praisonai.cli import _managed_records as records
from praisonai.cli import _managed_render as render
from praisonai.cli import _managed_turn as turn
from praisonai.cli import _output
from praisonai.cli._app import PlainCommand
from praisonai.cli._options import AgentArg, AllOpt, InstanceIdsArg, JsonOpt, one_of

_HELP = "Managed agents: run a turn, and list, show, resume or delete the sessions it leaves."
app = typer.Typer(help=_HELP, no_args_is_help=True, rich_markup_mode=None)
sessions_app = typer.Typer(help="Stored sessions: list, show, resume, delete.", no_args_is_help=True,
                           rich_markup_mode=None)  # fmt: skip
agents_app = typer.Typer(help="Stored agents (a name, a config, its versions), and hosted agents: list, "
                         "show, update, archive.", no_args_is_help=True, rich_markup_mode=None)  # fmt: skip
app.add_typer(sessions_app, name="sessions")
app.add_typer(agents_app, name="agents")
RemoteOpt = Annotated[
    bool, typer.Option("--remote", help="Also ask the Anthropic API (ANTHROPIC_API_KEY) for its own list.")
]

ApproveOpt = Annotated[
    str,
    typer.Option(
        "--approve",
        metavar="ask|allow|deny",
        help="Answer tool calls that need confirmation: allow or deny them all, or ask on the terminal "
        "(ask, the default; with no terminal the call is left pending and the exit status is 3).",
    ),
]
SessionArg = Annotated[
    str, typer.Argument(metavar="SESSION_ID", help="A session id (msess_…).", show_default=False)
]
_APPROVALS = ("ask", "allow", "deny")


# ---- run and resume --------------------------------------------------------------------------


#: The Anthropic toolset with every tool asking first: what ``--ask`` configures.
ASK_EVERY_TOOL = {
    "type": "agent_toolset_20260401",
    "default_config": {"permission_policy": {"type": "always_ask"}},
}


@app.command("run", cls=PlainCommand, epilog=render.EXIT_CODES_HELP)
def run(
    prompt: Annotated[
        str, typer.Argument(metavar="PROMPT", help="What to ask the agent.", show_default=False)
    ],
    compute: Annotated[
        str | None,
        typer.Option(
            "--compute",
            "-c",
            metavar="NAME",
            help="Where the tools run: docker, local, ssh, … (default: the environment file's "
            "backend, else docker when it is available, else local under bubblewrap; never this "
            "host unisolated: name local for that).",
        ),
    ] = None,
    model: Annotated[str | None, typer.Option("--model", "-m", metavar="MODEL", help="The model.")] = None,
    system: Annotated[
        str | None, typer.Option("--system", "-s", metavar="TEXT", help="The system prompt.")
    ] = None,
    name: Annotated[
        str | None, typer.Option("--name", "-n", metavar="NAME", help="The agent's name in the store.")
    ] = None,
    provider: Annotated[
        str | None,
        typer.Option(
            "--provider",
            metavar="local|anthropic",
            help="Where the loop runs (default: local unless ANTHROPIC_API_KEY is set and no "
            "--compute is given).",
        ),
    ] = None,
    packages: Annotated[
        list[str] | None,
        typer.Option(
            "--packages",
            "-p",
            metavar="MANAGER:A,B",
            help="Packages to install in the instance, e.g. pip:requests,rich or apt:jq; repeatable.",
        ),
    ] = None,
    title: Annotated[str | None, typer.Option("--title", metavar="TEXT", help="The session's title.")] = None,
    session: Annotated[
        str | None,
        typer.Option("--session", metavar="SESSION_ID", help="Continue this stored session instead."),
    ] = None,
    stream: Annotated[
        bool, typer.Option("--stream/--no-stream", help="Show the text as it is written (or whole).")
    ] = True,
    approve: ApproveOpt = "ask",
    ask: Annotated[
        bool, typer.Option("--ask", help="Every tool asks for approval before it runs (see --approve).")
    ] = False,
    max_turns: Annotated[
        int | None, typer.Option("--max-turns", metavar="N", help="At most N model requests this turn.")
    ] = None,
    budget_tokens: Annotated[
        int | None,
        typer.Option(
            "--budget-tokens", metavar="N", help="Stop before a request once the session spent N tokens."
        ),
    ] = None,
    json_: JsonOpt = False,
) -> None:
    """Run one turn of a managed agent and stream it: the text as it comes, each tool call with
    a one-line result, the usage at the end. The session's id is printed first, on stderr; with
    --json every event is one JSON object per line on stdout.

    Examples:

    \b
      praisonai managed run "write fib.py, run it, print fib(20)" --compute docker
      praisonai managed run "now add tests" --session msess_0123...
    """
    _check_approval(approve)
    _check_text(prompt, title)
    fields = (("model", model), ("system", system), ("name", name), ("session_title", title),
              ("max_turns", max_turns), ("budget_tokens", budget_tokens))  # fmt: skip
    config: dict[str, Any] = {key: value for key, value in fields if value is not None}
    if ask:
        config["tools"] = [ASK_EVERY_TOOL]
    if packages:
        from praisonai.managed.config import parse_packages

        config["packages"] = parse_packages(packages)
    if session is not None:
        if config or compute or provider:
            raise ConfigError(
                "--session continues a stored session with its own agent, compute and title; drop "
                "--model, --system, --name, --packages, --compute, --provider, --title, --ask, "
                "--max-turns and --budget-tokens"
            )
        raise typer.Exit(_resumed_turn(session, prompt, approve, force=False, stream=stream, json_=json_))
    view = turn.view(json_)
    approver = turn.Approver(approve, view)
    from praisonai.managed.agent import ManagedAgent

    agent = ManagedAgent(provider, compute, config or None, on_tool_confirmation=approver)
    raise typer.Exit(turn.drive(agent, prompt, view, approver, stream=stream))


def _resumed_turn(
    session_id: str, prompt: str | None, approve: str, *, force: bool, stream: bool, json_: bool
) -> int:
    """Take the session and run its next turn; with no prompt and nothing pending, show it."""
    _check_text(prompt, None)  # before the session is taken: nothing is stored for a bad prompt
    if prompt is None:
        from praisonai.managed import sessions

        if not sessions.show_session(session_id).record.pending:
            show(session_id, events=False, usage=False, json_=json_)
            return render.EXIT_OK
    view = turn.view(json_)
    approver = turn.Approver(approve, view)
    from praisonai.managed.agent import ManagedAgent

    try:
        agent = ManagedAgent.resume(session_id, force=force, on_tool_confirmation=approver)
    except SessionBusyError as exc:
        _output.error(f"{exc} (--force takes it over)")
        return render.EXIT_BUSY
    except KeyboardInterrupt:  # while its instance was reattached or replaced: no turn to interrupt
        _output.note(f"interrupted while resuming; {session_id} stays resumable")
        return render.EXIT_INTERRUPTED
    turn.announce(session_id)
    return turn.drive(agent, prompt, view, approver, stream=stream)


def _check_text(prompt: str | None, title: str | None) -> None:
    """The prompt and the title, refused (exit 2) before anything is provisioned or stored."""
    from praisonai.managed.text import check_prompt, line_problem

    check_prompt(prompt)
    why = None if title is None else line_problem(title)
    if why is not None:
        raise ConfigError(f"--title cannot be used: {why}; give plain text on one line")


def _check_approval(approve: str) -> None:
    if approve not in _APPROVALS:
        raise ConfigError(f"--approve takes ask, allow or deny, not {approve!r}")


# ---- sessions --------------------------------------------------------------------------------


@sessions_app.command("list", cls=PlainCommand)
def list_(
    agent_arg: AgentArg = None,
    agent: Annotated[
        str | None, typer.Option("--agent", metavar="NAME|ID", help="Only this agent's sessions.")
    ] = None,
    status: Annotated[
        str | None,
        typer.Option(
            "--status",
            metavar="STATUS",
            help="Only sessions in this status: idle, running, "
            "requires_action, error, interrupted or terminated.",
        ),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", "-l", metavar="N", help="At most N sessions.")] = 20,
    remote: RemoteOpt = False,
    json_: JsonOpt = False,
) -> None:
    """List stored sessions, the most recently active first. With --remote, the API's sessions
    too (at most N): each stored one shows its remote session's status, and those with no
    local record are listed after them, flagged."""
    from praisonai.managed import sessions
    from praisonai.managed.store import open_store

    agent = one_of(agent_arg, "--agent", agent, command="sessions list")
    with open_store() as store:
        found = sessions.list_sessions(store, agent=agent, status=status, limit=limit)
        agents = {a.id: a for a in sessions.list_agents(store)}
    for why in store.skipped:  # the good rows are listed; each bad one is named, once
        _output.error(f"skipped: {why}")
    if remote:
        hosted.sessions_list(found, agents, limit, status, as_json=json_)
        return
    _output.table(*records.sessions_table(found, agents, as_json=json_), as_json=json_)


@sessions_app.command("show", cls=PlainCommand)
def show(
    session_id: SessionArg,
    events: Annotated[bool, typer.Option("--events", help="Also print the transcript.")] = False,
    usage: Annotated[bool, typer.Option("--usage", help="Also print the usage of each turn.")] = False,
    json_: JsonOpt = False,
) -> None:
    """Show a session: its agent, status and stop reason, the tool calls waiting for approval,
    the last error, its usage (cumulative; per turn with --usage, cache tokens included) and
    its instance; with --events, its transcript (tool calls and results included). A hosted
    session adds its remote session (agent@version, environment, status) and what the API
    billed (cache writes, list cost, active seconds), as last recorded."""
    from praisonai.managed import sessions

    view = sessions.show_session(session_id)
    if json_:
        _output.print_json(records.session_json(view, events=events))
        return
    records.session_card(view, sys.stdout)
    if usage:
        print()
        _output.table(*records.turns_table(view.usage))
    if events:
        print()
        transcript = render.Transcript(sys.stdout, stored=True)
        for item in view.events:
            transcript.event(item.event)


@sessions_app.command("resume", cls=PlainCommand, epilog=render.EXIT_CODES_HELP)
def resume(
    session_id: SessionArg,
    prompt: Annotated[
        str | None,
        typer.Argument(
            metavar="[PROMPT]",
            help="The next message (none: answer what is pending, or show the session's state).",
            show_default=False,
        ),
    ] = None,
    approve: ApproveOpt = "ask",
    force: Annotated[
        bool, typer.Option("--force", help="Take the session over even from a live process that holds it.")
    ] = False,
    stream: Annotated[
        bool, typer.Option("--stream/--no-stream", help="Show the text as it is written.")
    ] = True,
    json_: JsonOpt = False,
) -> None:
    """Continue a stored session, from any process: its instance is reattached (or replaced,
    and said so) and its transcript rebuilt. With no PROMPT, the tool calls waiting for approval
    are answered and the turn goes on; with none waiting, the session is shown."""
    _check_approval(approve)
    raise typer.Exit(
        _resumed_turn(session_id, prompt, approve=approve, force=force, stream=stream, json_=json_)
    )


@sessions_app.command("delete", cls=PlainCommand)
def delete(
    session_id: SessionArg,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
    archive: Annotated[
        bool, typer.Option("--archive", help="A hosted session: archive it on the API (read-only) instead.")
    ] = False,
    keep_remote: Annotated[
        bool, typer.Option("--keep-remote", help="A hosted session: leave its remote session as it is.")
    ] = False,
    json_: JsonOpt = False,
) -> None:
    """Delete a session for good: its remote session (a hosted one's), its instance, its rows
    and its transcript. Each step is reported (one already done counts as done); exits 1 when
    one failed (run it again: the steps that are done stay done), 7 when a live process is
    running a turn of it."""
    from praisonai.managed import sessions

    if not yes:
        view = sessions.show_session(session_id)  # an unknown id is said before anything is asked
        if not sys.stdin.isatty():
            raise ConfigError(f"not deleting {session_id} without --yes: there is no terminal to ask on")
        if not turn.confirm(f"delete {records.session_summary(view)}?"):
            _output.note("nothing deleted")
            return
    try:
        report = sessions.delete_session(session_id, archive=archive, keep_remote=keep_remote)
    except SessionBusyError as exc:
        _output.error(str(exc))
        raise typer.Exit(render.EXIT_BUSY) from None
    if json_:
        steps = [{"name": s.name, "ok": s.ok, "detail": s.detail} for s in report.steps]
        _output.print_json({"id": session_id, "ok": report.ok, "steps": steps})
    for step in [] if json_ else report.steps:
        if step.ok:
            typer.echo(_output.safe(f"{step.name}: {step.detail}"))
        else:
            _output.error(f"{step.name}: {step.detail}")
    if not report.ok:
        raise typer.Exit(1)


# ---- agents, instances -----------------------------------------------------------------------


@agents_app.command("list", cls=PlainCommand)
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
        hosted.agents_list(include_archived, as_json=json_)
        return
    _output.table(*records.agents_table(sessions.list_agents(), as_json=json_), as_json=json_)


app.add_typer(hosted.register(agents_app), name="envs")  # here: after agents list, in the help too


@app.command("ps", cls=PlainCommand)
def ps(json_: JsonOpt = False) -> None:
    """List instances (as praisonai compute ps does); a session's instance is among them."""
    from praisonai.cli import compute

    compute.ps(json=json_)


@app.command("stop", cls=PlainCommand)
def stop(
    instance_ids: InstanceIdsArg = None,
    all_: AllOpt = False,
) -> None:
    """Shut down instances (as praisonai compute stop does). A session whose instance was
    stopped gets a new one when it is resumed, and says so."""
    from praisonai.cli import compute

    compute.stop(instance_ids, all_)
