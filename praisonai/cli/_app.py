"""The typer app behind ``praisonai``, built with only the command group a run needs.

Help is click's plain layout (``rich_markup_mode=None``): no type labels, paragraphs re-flowed to
the terminal's width, and no rich import for it.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Sequence
from typing import Annotated, Any

import typer
from typer.core import TyperCommand

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
        group: typer.Typer = importlib.import_module(module).app
        for command in group.registered_commands:
            if command.cls in (None, TyperCommand):  # not a class of its own
                command.cls = PlainCommand
        app.add_typer(group, name=name)
    return app


def run(args: Sequence[str]) -> None:
    """Run the command line ``args``; a known group's first word loads that group alone."""
    wanted = [args[0]] if args and args[0] in GROUPS else list(GROUPS)
    build(wanted)(args=list(args), prog_name="praisonai")


class PlainCommand(TyperCommand):
    """A command whose help names its arguments by their metavar (``PATH``, ``-- COMMAND [ARG]...``)
    and shows no type labels (``<list[str]>``); the description says what an argument is."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        arguments = [_usage_name(p) for p in self.get_params(ctx) if p.param_type_name == "argument"]
        return [self.options_metavar or "[OPTIONS]", *arguments]

    def format_options(self, ctx: Any, formatter: Any) -> None:
        params = self.get_params(ctx)
        arguments = [
            (_usage_name(p), help)
            for p in params
            if p.param_type_name == "argument" and (help := getattr(p, "help", ""))
        ]
        options = [
            (_TYPE_LABEL.sub(_click_label, record[0]), record[1])
            for p in params
            if p.param_type_name == "option" and (record := p.get_help_record(ctx))
        ]
        if arguments:
            with formatter.section("Arguments"):
                formatter.write_dl(arguments)
        if options:
            with formatter.section("Options"):
                formatter.write_dl(options)


#: typer's type label (``--keep <int>``), shown click's way (``--keep INTEGER``) where no metavar is set.
_TYPE_LABEL = re.compile(r"<([a-z][a-z\[\]]*)>")
_CLICK_NAMES = {"str": "TEXT", "list[str]": "TEXT", "int": "INTEGER", "float": "NUMBER", "path": "PATH"}


def _click_label(match: re.Match[str]) -> str:
    return _CLICK_NAMES.get(match[1], match[1].upper())


def _usage_name(argument: Any) -> str:
    if argument.metavar:
        return str(argument.metavar)
    name = str(argument.name).upper() + ("..." if argument.nargs != 1 else "")
    return name if argument.required else f"[{name}]"


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
