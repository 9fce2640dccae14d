"""The ``praisonai`` command: a typer app with one thin module per command group.

Start-up is part of the product. ``--version`` and the top-level help are answered here, before
typer, rich or any provider is imported; any other command imports typer and only the module of
the group it names (see ``_app``).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys

from praisonai import __version__
from praisonai.cli._groups import GROUPS, SUMMARY

USAGE = """\
Usage: praisonai [--version] [--help] COMMAND [ARGS]...

  {summary}

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
        print(
            USAGE.format(
                summary=SUMMARY, commands="\n".join(f"  {n:<{width}}  {h}" for n, (_, h) in GROUPS.items())
            )
        )
        return
    # The command's pydantic models are its own: pydantic's search for plugins, which reads the
    # entry points of every installed distribution (tens of ms at each start), has nothing to find
    # for them. Instances never see the variable: their environment is built, not inherited.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    from praisonai._errors import PraisonAIError
    from praisonai.cli._app import run

    try:
        run(args)  # click handles usage errors and exit codes; our errors propagate to here
    except PraisonAIError as exc:
        if os.environ.get("PRAISONAI_DEBUG"):
            raise
        from praisonai.cli import _output

        _output.error(str(exc))
        _exit_now(2 if isinstance(exc, ValueError) else 1)
    except SystemExit as exc:
        if exc.code is not None and not isinstance(exc.code, int):
            raise
        _exit_now(exc.code or 0)
    _exit_now(0)


def _exit_now(code: int) -> None:
    """Exit once the command is done, skipping the interpreter's teardown of every module and
    object (hundreds of milliseconds after a run that loaded docker-py and pydantic). The exit
    handlers still run first (open sandboxes closed, logs flushed), then the output is flushed."""
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing more can be said there
            stream.flush()
    os._exit(code)
