"""The ``praisonai`` command: a typer app with one thin module per command group.

Start-up is part of the product. ``--version`` and the top-level help are answered here, before
typer, rich or any provider is imported; any other command imports typer and only the module of
the group it names (see ``_app``).
"""

from __future__ import annotations

import os
import sys

from praisonai import __version__

#: The command groups: name -> (module, one line for the top-level help).
GROUPS = {
    "sandbox": ("praisonai.cli.sandbox", "Run a command in a fresh instance: sandbox run -- COMMAND."),
    "compute": ("praisonai.cli.compute", "Providers and their instances: providers, ps, stop, gc."),
    "env": ("praisonai.cli.env", "The environment file .praisonai/environment.yaml: validate, show, plan, build."),
}

USAGE = """\
Usage: praisonai [--version] [--help] COMMAND [ARGS]...

  Run AI agents' shell and file tools in isolated instances (local, docker, ssh).

Commands:
{commands}

Options:
  --version  Print the version.
  --help     Show this message and exit.

Run 'praisonai COMMAND --help' for the options of a command.
"""


def main() -> None:
    """Entry point: user mistakes become one red line and a non-zero exit, never a traceback."""
    args = sys.argv[1:]
    if args == ["--version"]:
        print(f"praisonai {__version__}")
        return
    if args in ([], ["--help"], ["-h"]):
        width = max(map(len, GROUPS))
        print(USAGE.format(commands="\n".join(f"  {n:<{width}}  {h}" for n, (_, h) in GROUPS.items())))
        return
    from praisonai._errors import PraisonAIError
    from praisonai.cli._app import run

    try:
        run(args)  # click handles usage errors and exit codes; our errors propagate to here
    except PraisonAIError as exc:
        _fail(exc, 2 if isinstance(exc, ValueError) else 1)


def _fail(exc: Exception, code: int) -> None:
    if os.environ.get("PRAISONAI_DEBUG"):
        raise exc
    from praisonai.cli import _output

    _output.error(str(exc))
    sys.exit(code)
