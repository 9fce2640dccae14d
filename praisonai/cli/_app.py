"""The typer app behind ``praisonai``, built with only the command group a run needs.

Help is click's plain layout (``rich_markup_mode=None``), each command's laid out by
:class:`praisonai.cli._help.PlainCommand`: no type labels, paragraphs re-flowed to the terminal's
width, and no rich import for it.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Annotated

import typer

from praisonai import __version__
from praisonai.cli._groups import GROUPS, SUMMARY


def build(groups: Sequence[str]) -> typer.Typer:
    """The root app with the named groups (their modules are imported here, not before)."""
    app = typer.Typer(
        help=SUMMARY,
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        add_completion=False,
        rich_markup_mode=None,
    )
    app.callback()(_root)
    for name in groups:
        module, _ = GROUPS[name]
        app.add_typer(importlib.import_module(module).app, name=name)
    return app


def run(args: Sequence[str]) -> None:
    """Run the command line ``args``; a known group's first word loads that group alone."""
    wanted = [args[0]] if args and args[0] in GROUPS else list(GROUPS)
    build(wanted)(args=list(args), prog_name="praisonai")


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
