"""``praisonai managed sessions list|show|resume|fork|delete``: the sessions in the store under
``PRAISONAI_HOME``, from any terminal (``--remote``: beside the API's, see :mod:`.remote`)."""

from __future__ import annotations

import dataclasses
import sys
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from praisonai.managed.agent import ManagedAgent
    from praisonai.managed.events import Event

from praisonai._errors import ConfigError, SessionBusyError
from praisonai._limits import DEFAULT_SESSIONS_LISTED, DEFAULT_TURN_TIMEOUT_S
from praisonai.cli import _output
from praisonai.cli._help import PlainCommand
from praisonai.cli._options import AgentArg, JsonOpt, one_of
from praisonai.cli.managed import records, turn
from praisonai.cli.managed.outcome import EXIT_BUSY, EXIT_CODES_HELP, EXIT_INTERRUPTED, EXIT_OK
from praisonai.cli.managed.remote import list_with_remote
from praisonai.cli.managed.transcript import Transcript

app = typer.Typer(
    help="Stored sessions: list, show, resume, fork, delete.", no_args_is_help=True, rich_markup_mode=None
)
RemoteOpt = Annotated[
    bool, typer.Option("--remote", help="Also ask the Anthropic API (ANTHROPIC_API_KEY) for its own list.")
]
SessionArg = Annotated[
    str, typer.Argument(metavar="SESSION_ID", help="A session id (msess_…).", show_default=False)
]


@app.command("list", cls=PlainCommand)
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
    limit: Annotated[
        int, typer.Option("--limit", "-l", metavar="N", help="At most N sessions.")
    ] = DEFAULT_SESSIONS_LISTED,
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
        list_with_remote(found, agents, limit, status, as_json=json_)
        return
    _output.table(*records.sessions_table(found, agents, as_json=json_), as_json=json_)


@app.command("show", cls=PlainCommand)
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
        _output.print_json(sessions.session_json(view, events=events))
        return
    records.session_card(view, sys.stdout)
    if usage:
        print()
        _output.table(*records.turns_table(view.usage))
    if events:
        print()
        transcript = Transcript(sys.stdout, stored=True)
        for item in view.events:
            transcript.event(item.event)


@app.command("resume", cls=PlainCommand, epilog=EXIT_CODES_HELP)
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
    approve: turn.ApproveOpt = "ask",
    force: Annotated[
        bool, typer.Option("--force", help="Take the session over even from a live process that holds it.")
    ] = False,
    stream: Annotated[
        bool, typer.Option("--stream/--no-stream", help="Show the text as it is written.")
    ] = True,
    turn_timeout_s: turn.TurnTimeoutOpt = DEFAULT_TURN_TIMEOUT_S,
    json_: JsonOpt = False,
) -> None:
    """Continue a stored session, from any process: its instance is reattached (or replaced,
    and said so) and its transcript rebuilt. With no PROMPT, the tool calls waiting for approval
    are answered and the turn goes on; with none waiting, the session is shown."""
    turn.check_approval(approve)
    deadline = turn.turn_timeout(turn_timeout_s)
    raise typer.Exit(
        resumed_turn(
            session_id, prompt, approve, force=force, stream=stream, json_=json_, turn_timeout_s=deadline
        )
    )


@app.command("fork", cls=PlainCommand)
def fork(
    session_id: SessionArg,
    at_turn: Annotated[
        int | None,
        typer.Option("--at-turn", metavar="K", help="Fork as turn K ended (default: the last turn)."),
    ] = None,
    title: Annotated[str | None, typer.Option("--title", metavar="T", help="The fork's title.")] = None,
    json_: JsonOpt = False,
) -> None:
    """Fork a stored session: a new session whose transcript is this one's up to turn K and
    whose instance starts from a snapshot of this one's instance as turn K ended (its
    checkpoint: turn checkpoints on in the agent's config to fork before the last turn). The
    original is left as it is; resume either one. Prints the new session's id."""
    from praisonai.managed.fork import fork_session

    result = fork_session(session_id, at_turn, title=title)
    if json_:
        _output.print_json(dataclasses.asdict(result))
        return
    typer.echo(result.session_id)
    if result.note:
        _output.note(result.note)


@app.command("delete", cls=PlainCommand)
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
        raise typer.Exit(EXIT_BUSY) from None
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


def resumed_turn(
    session_id: str,
    prompt: str | None,
    approve: str,
    *,
    force: bool,
    stream: bool,
    json_: bool,
    turn_timeout_s: float | None = DEFAULT_TURN_TIMEOUT_S,
) -> int:
    """Take the session and run its next turn; with no prompt and nothing pending, show it."""
    turn.check_text(prompt, None)  # before the session is taken: nothing is stored for a bad prompt
    if prompt is None:
        from praisonai.managed import sessions

        if not sessions.show_session(session_id).record.pending:
            show(session_id, events=False, usage=False, json_=json_)
            return EXIT_OK
    view = turn.view(json_)
    approver = turn.Approver(approve, view)
    from praisonai.managed.agent import ManagedAgent

    try:
        agent = ManagedAgent.resume(
            session_id, force=force, on_tool_confirmation=approver, turn_timeout_s=turn_timeout_s
        )
    except SessionBusyError as exc:
        _output.error(f"{exc} (--force takes it over)")
        return EXIT_BUSY
    except KeyboardInterrupt:  # while its instance was reattached or replaced: no turn to interrupt
        _output.note(f"interrupted while resuming; {session_id} stays resumable")
        return EXIT_INTERRUPTED
    turn.announce(session_id)
    for event in _instance_events(agent, session_id):  # stored while resuming, before the view was on
        view.event(event)
    return turn.drive(agent, prompt, view, approver, stream=stream)


def _instance_events(agent: ManagedAgent, session_id: str) -> list[Event]:
    """What this resume did to the session's instance (reattached, resumed from pause, or
    replaced): the ``sandbox.*`` events logged since its ``session.resumed``."""
    log = [stored.event for stored in agent.store.events(session_id)]
    since = max((i for i, ev in enumerate(log) if ev.type == "session.resumed"), default=len(log))
    return [ev for ev in log[since:] if ev.type.startswith("sandbox.")]
