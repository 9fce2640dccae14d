"""The help layout of every ``praisonai`` command: click's plain layout (``rich_markup_mode=None``:
no rich import for it), where an argument is shown by its metavar alone.

typer's own plain layout labels each argument with its Python type and braces the required ones
(``{SESSION_ID}``, ``SESSION_ID <str>  ...  [required]``); no typer or click setting turns that
off. So :class:`PlainCommand` overrides click's ``Command.collect_usage_pieces`` and
``format_options``, which typer (0.29) runs from its own copy of click. That is why pyproject.toml
pins typer to the range these overrides were tested with, and tests/cli/test_help_layout.py
asserts the exact layout they produce: an upgrade that changes it fails there, not in front of a
user. Options need no override: each one that takes a value declares its metavar (``--keep
INTEGER``), which typer shows in place of its type label.
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperCommand

#: Stands in an option's help for the installed providers' names, filled in when help is shown:
#: listing them reads every installed distribution's entry points, which a run must not pay.
PROVIDERS = "<providers>"


class PlainCommand(TyperCommand):
    """A command whose help names its arguments by their metavar (``PATH``, ``-- COMMAND [ARG]...``)
    and shows no type labels (``<list[str]>``); the description says what an argument is."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        arguments = [shown_name(p) for p in self.get_params(ctx) if p.param_type_name == "argument"]
        return [self.options_metavar or "[OPTIONS]", *arguments]

    def format_options(self, ctx: Any, formatter: Any) -> None:
        params = self.get_params(ctx)
        arguments = [
            (shown_name(p), help)
            for p in params
            if p.param_type_name == "argument" and (help := getattr(p, "help", ""))
        ]
        options = [
            _filled(record)
            for p in params
            if p.param_type_name == "option" and (record := p.get_help_record(ctx))
        ]
        if arguments:
            with formatter.section("Arguments"):
                formatter.write_dl(arguments)
        if options:
            with formatter.section("Options"):
                formatter.write_dl(options)


def shown_name(argument: Any) -> str:
    """An argument as the usage line and the Arguments section show it: its metavar (every
    argument of ours declares one: ``SESSION_ID``, ``[PATH]``, ``[INSTANCE_ID]...``)."""
    return str(argument.metavar) if argument.metavar else str(argument.name).upper()


def _filled(record: tuple[str, str]) -> tuple[str, str]:
    """An option's help record with :data:`PROVIDERS` replaced by the providers' names."""
    name, text = record
    if PROVIDERS not in text:
        return record
    from praisonai.compute.registry import available_providers

    return name, text.replace(PROVIDERS, ", ".join(available_providers()))
