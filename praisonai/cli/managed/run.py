"""``praisonai managed run``: one turn of a managed agent, streamed to the terminal; a new
session, or (``--session``) the next turn of a stored one."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from praisonai._errors import ConfigError
from praisonai._limits import DEFAULT_TURN_TIMEOUT_S
from praisonai.cli._options import JsonOpt
from praisonai.cli.managed import turn
from praisonai.cli.managed.sessions import resumed_turn

#: The Anthropic toolset with every tool asking first: what ``--ask`` configures.
ASK_EVERY_TOOL = {
    "type": "agent_toolset_20260401",
    "default_config": {"permission_policy": {"type": "always_ask"}},
}


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
            help="Where the tools run: a provider that praisonai compute providers lists (default: "
            "the environment file's backend, else docker when it is available, else local under "
            "bubblewrap; never this host unisolated: name local for that).",
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
    workspace: Annotated[
        str | None,
        typer.Option(
            "--workspace",
            metavar="PATH",
            help="Upload this directory into the instance's working dir first (.gitignore honoured); "
            "see praisonai managed diff.",
        ),
    ] = None,
    repo: Annotated[
        str | None,
        typer.Option(
            "--repo", metavar="URL[@REF]", help="git clone this repository into the working dir first."
        ),
    ] = None,
    repo_token_env: Annotated[
        str | None,
        typer.Option(
            "--repo-token-env",
            metavar="NAME",
            help="The environment variable holding --repo's token (given to git, never on a command line).",
        ),
    ] = None,
    session: Annotated[
        str | None,
        typer.Option("--session", metavar="SESSION_ID", help="Continue this stored session instead."),
    ] = None,
    stream: Annotated[
        bool, typer.Option("--stream/--no-stream", help="Show the text as it is written (or whole).")
    ] = True,
    approve: turn.ApproveOpt = "ask",
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
    turn_timeout_s: turn.TurnTimeoutOpt = DEFAULT_TURN_TIMEOUT_S,
    json_: JsonOpt = False,
) -> None:
    """Run one turn of a managed agent and stream it: the text as it comes, each tool call with
    a one-line result, the usage at the end. The session's id is printed first, on stderr; with
    --json every event is one JSON object per line on stdout.

    Examples:

    \b
      praisonai managed run "write fib.py, run it, print fib(20)" --compute docker
      praisonai managed run "now add tests" --session msess_0123...
      praisonai managed run "fix the failing test" --workspace . --compute docker
    """
    turn.check_approval(approve)
    turn.check_text(prompt, title)
    deadline = turn.turn_timeout(turn_timeout_s)
    fields = (
        ("model", model),
        ("system", system),
        ("name", name),
        ("session_title", title),
        ("max_turns", max_turns),
        ("budget_tokens", budget_tokens),
    )
    config: dict[str, Any] = {key: value for key, value in fields if value is not None}
    if ask:
        config["tools"] = [ASK_EVERY_TOOL]
    if packages:
        from praisonai.managed.config import parse_packages

        config["packages"] = parse_packages(packages)
    if session is not None:
        if config or compute or provider or workspace or repo:
            raise ConfigError(
                "--session continues a stored session with its own agent, compute and title; drop "
                "--model, --system, --name, --packages, --compute, --provider, --title, --ask, "
                "--max-turns, --budget-tokens, --workspace and --repo"
            )
        raise typer.Exit(
            resumed_turn(
                session, prompt, approve, force=False, stream=stream, json_=json_, turn_timeout_s=deadline
            )
        )
    view = turn.view(json_)
    approver = turn.Approver(approve, view)
    from praisonai.managed.agent import ManagedAgent

    agent = ManagedAgent(
        provider,
        compute,
        config or None,
        on_tool_confirmation=approver,
        workspace=workspace,
        repo=repo,
        repo_token_env=repo_token_env,
        turn_timeout_s=deadline,
    )
    raise typer.Exit(turn.drive(agent, prompt, view, approver, stream=stream))
