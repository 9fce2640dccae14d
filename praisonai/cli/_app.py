"""The typer app behind ``praisonai``, built with only the command group a run needs.

Commands run in click's non-standalone mode, so the entry point decides every exit status (a
usage mistake, a closed pipe; see ``praisonai.cli.main``). Help is click's plain layout
(``rich_markup_mode=None``), each command's laid out by :class:`praisonai.cli._help.PlainCommand`:
no type labels, paragraphs re-flowed to the terminal's width, and no rich import for it.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Annotated

import typer

from praisonai import __version__
from praisonai.cli._groups import GROUPS, SUMMARY
from praisonai.cli._help import PlainCommand


def build(groups: Sequence[str]) -> typer.Typer:
    """The root app with the named groups (their modules are imported here, not before)."""
    app = typer.Typer(
        help=SUMMARY,
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        add_completion=True,
        rich_markup_mode=None,
        context_settings={"help_option_names": ["-h", "--help"]},  # inherited by every command
    )
    app.callback()(_root)
    for name in groups:
        module = importlib.import_module(GROUPS[name][0])
        if hasattr(module, "command"):  # a group of one: the command itself (``dashboard``)
            app.command(name, cls=PlainCommand)(module.command)
        else:
            app.add_typer(module.app, name=name)
    return app


def run(args: Sequence[str]) -> int:
    """Run the command line ``args`` and return its exit status; a known group's first word loads
    that group alone.

    Raises:
        click.ClickException: a usage mistake (not yet shown).
        click.Abort: Ctrl-C at a prompt.
        PraisonAIError, OSError: what the command raised.
    """
    wanted = [args[0]] if args and args[0] in GROUPS else list(GROUPS)
    command = typer.main.get_command(build(wanted))
    code = command.main(args=list(args), prog_name="praisonai", standalone_mode=False)
    return code if isinstance(code, int) else 0


def _version(value: bool) -> None:
    if value:
        print(f"praisonai {__version__}")
        raise typer.Exit()


def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    """praisonai: remote-sandbox execution for AI agents."""
