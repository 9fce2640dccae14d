"""``praisonai managed …``: a managed agent's turns from the command line (:mod:`.run`), the
sessions they leave in the store under ``PRAISONAI_HOME`` (:mod:`.sessions`: list, show, resume
from any terminal, delete), the stored and hosted agents (:mod:`.agents`) and the hosted
environments (:mod:`.envs`) of the Anthropic key.

The loop, the store and the sessions are the library's (:mod:`praisonai.managed`); these commands
parse their arguments, answer tool confirmations and turn Ctrl-C into an interrupt (:mod:`.turn`),
and print (:mod:`.transcript`, :mod:`.records`). ``ps`` and ``stop`` are ``praisonai compute
ps/stop`` under the names PraisonAI's users know. Nothing heavy is imported before a command runs.
"""

from __future__ import annotations

import typer

from praisonai.cli._help import PlainCommand
from praisonai.cli._options import AllOpt, InstanceIdsArg, JsonOpt, QuietOpt
from praisonai.cli.managed import agents, diff, envs, run, sessions
from praisonai.cli.managed.outcome import EXIT_CODES_HELP

__all__ = ["app"]

app = typer.Typer(
    help="Managed agents: run a turn, and list, show, resume or delete the sessions it leaves.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(sessions.app, name="sessions")
app.add_typer(agents.app, name="agents")
app.command("run", cls=PlainCommand, epilog=EXIT_CODES_HELP)(run.run)
app.add_typer(envs.app, name="envs")
app.command("diff", cls=PlainCommand)(diff.diff)


@app.command("ps", cls=PlainCommand)
def ps(json_: JsonOpt = False, quiet: QuietOpt = False) -> None:
    """List instances (as praisonai compute ps does); a session's instance is among them."""
    from praisonai.cli import compute

    compute.ps(json=json_, quiet=quiet)


@app.command("stop", cls=PlainCommand)
def stop(
    instance_ids: InstanceIdsArg = None,
    all_: AllOpt = False,
) -> None:
    """Shut down instances (as praisonai compute stop does). A session whose instance was
    stopped gets a new one when it is resumed, and says so."""
    from praisonai.cli import compute

    compute.stop(instance_ids, all_)
