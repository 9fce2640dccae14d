"""The ``praisonai`` command: a typer app with one thin module per command group."""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from praisonai import __version__
from praisonai._errors import PraisonAIError
from praisonai.cli import _output, compute, env, sandbox

app = typer.Typer(
    help="Run AI agents' shell and file tools in isolated instances.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.add_typer(compute.app, name="compute")
app.add_typer(sandbox.app, name="sandbox")
app.add_typer(env.app, name="env")


def _version(value: bool) -> None:
    if value:
        print(f"praisonai {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    """praisonai: remote-sandbox execution for AI agents."""


def main() -> None:
    """Entry point: user mistakes become one red line and a non-zero exit, never a traceback."""
    try:
        app()  # click handles usage errors and exit codes; our errors propagate to here
    except PraisonAIError as exc:
        _fail(exc, 2 if isinstance(exc, ValueError) else 1)


def _fail(exc: Exception, code: int) -> None:
    if os.environ.get("PRAISONAI_DEBUG"):
        raise exc
    _output.error(str(exc))
    sys.exit(code)
