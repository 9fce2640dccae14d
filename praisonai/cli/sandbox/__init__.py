"""``praisonai sandbox``: docker's verbs for instances. ``run`` (a command in a fresh instance,
removed after) in ``run``; ``create``, ``exec`` and ``cp`` (an instance that outlives the command
line) in ``instance``; ``snapshot``, ``fork``, ``restore`` (and ``create --from-snapshot``) in
``snapshots``; ``rm``, ``shell``, ``port`` and ``logs`` are ``compute``'s own commands,
registered here too under docker's names."""

from __future__ import annotations

import typer

from praisonai.cli import logs, terminal
from praisonai.cli._help import PlainCommand
from praisonai.cli.compute import stop
from praisonai.cli.ports import port
from praisonai.cli.sandbox.instance import cp, create, exec_
from praisonai.cli.sandbox.run import run
from praisonai.cli.sandbox.snapshots import fork, restore, snapshot

app = typer.Typer(
    help="Run commands in instances, as docker does.", no_args_is_help=True, rich_markup_mode=None
)
app.command("run", cls=PlainCommand)(run)
app.command("create", cls=PlainCommand)(create)
app.command("exec", cls=PlainCommand)(exec_)
app.command("cp", cls=PlainCommand)(cp)
app.command("snapshot", cls=PlainCommand)(snapshot)
app.command("fork", cls=PlainCommand)(fork)
app.command("restore", cls=PlainCommand)(restore)
app.command("rm", cls=PlainCommand)(stop)
app.command("port", cls=PlainCommand)(port)
terminal.register(app)
logs.register(app)
