"""The ``praisonai`` command: a typer app with one thin module per command group.

Start-up is part of the product. ``--version`` and the top-level help are answered here, before
typer, rich or any provider is imported; any other command imports typer and only the module of
the group it names (see ``_app``).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import select
import sys

from praisonai import __version__
from praisonai.cli._groups import CUT_OFF, GROUPS, OWN_FAILURE, RUNNERS, SUMMARY

#: Set by the shell when it asks for completions (click's protocol, named after the program).
COMPLETION_VAR = "_PRAISONAI_COMPLETE"

USAGE = """\
Usage: praisonai [--version] [--help] COMMAND [ARGS]...

  {summary}

Commands:
{commands}

Options:
  --version             Print the version.
  -v, --verbose         Log what praisonai does on stderr (-vv: each vendor call too; or
                        PRAISONAI_LOG=info|debug).
  --install-completion  Install completion for the current shell.
  --show-completion     Show completion for the current shell, to copy it or customize it.
  -h, --help            Show this message and exit.

Run 'praisonai COMMAND --help' for the options of a command.
"""


def main() -> None:
    """Entry point: user mistakes become one red line and a non-zero exit, never a traceback."""
    args = sys.argv[1:]
    if args == ["--version"]:
        print(f"praisonai {__version__}")
        return
    if args in ([], ["--help"], ["-h"]) and COMPLETION_VAR not in os.environ:
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
    args, verbosity = _verbosity(args)
    from praisonai import _telemetry

    _telemetry.configure(verbosity)
    _exit_now(_run(args))


def _verbosity(args: list[str]) -> tuple[list[str], int]:
    """``args`` without the log flags, anywhere before ``--`` (``-v``: INFO lines on stderr,
    ``-vv`` or ``-v -v``: DEBUG; ``--verbose`` is ``-v``), and how many were given."""
    end = args.index("--") if "--" in args else len(args)
    flags = {"-v": 1, "--verbose": 1, "-vv": 2}
    count = sum(flags.get(a, 0) for a in args[:end])
    return [a for a in args[:end] if a not in flags] + args[end:], count


def _run(args: list[str]) -> int:
    """The exit status of the command line ``args``: the command's own; for our failures 1 (2
    for a mistake in what was asked), or :data:`OWN_FAILURE` for the commands that pass on an
    instance command's status. When the reader of our output went away (``| head``): 0, or
    :data:`CUT_OFF` for those commands, whose instance command was stopped before its end."""
    import typer

    from praisonai._errors import PraisonAIError
    from praisonai.cli import _output
    from praisonai.cli._app import run

    runner = tuple(args[:2]) in RUNNERS
    try:
        return run(args)  # our errors propagate to here
    except PraisonAIError as exc:
        if os.environ.get("PRAISONAI_DEBUG"):
            raise
        _output.error(str(exc))
        return OWN_FAILURE if runner else 2 if isinstance(exc, ValueError) else 1
    except typer.TyperException as mistake:  # a usage mistake (click's exception), in click's words
        show = getattr(mistake, "show", None)  # click's exceptions show themselves with usage
        if show is None:
            _output.error(mistake.format_message())
        else:
            show()
        return OWN_FAILURE if runner else mistake.exit_code
    except typer.Abort:  # Ctrl-C at a prompt
        _output.error("aborted")
        return 130
    except Exception as exc:  # a closed pipe can come inside a task group's exception group
        if not _cut_off(exc):
            raise
        _silence_stdout()  # the reader went away: our output ends quietly
        return CUT_OFF if runner else 0
    except SystemExit as exc:  # raised past click (a callback's sys.exit)
        if exc.code is not None and not isinstance(exc.code, int):
            raise
        return exc.code or 0


def _cut_off(exc: BaseException) -> bool:
    """Whether ``exc`` (or an exception group holding it) says that the reader of our output went
    away: a command's output found its reader gone, or stdout's pipe broke with its reader gone
    (a broken pipe inside the instance's machinery is a failure, not this)."""
    from praisonai.cli.sandbox._running import ReaderGone

    def holds(kind: type[BaseException], error: BaseException) -> bool:
        return isinstance(error, kind) or any(holds(kind, e) for e in getattr(error, "exceptions", ()))

    return holds(ReaderGone, exc) or (holds(BrokenPipeError, exc) and _stdout_reader_gone())


def _stdout_reader_gone() -> bool:
    """Whether stdout is a pipe whose reader closed it (poll says so with POLLERR): a closed pipe
    inside the instance's machinery is a failure, not this."""
    poller = select.poll()
    poller.register(sys.stdout.fileno(), select.POLLOUT)
    return any(events & select.POLLERR for _, events in poller.poll(0))


def _silence_stdout() -> None:
    """The reader of stdout went away (``| head``): what is still buffered, or printed at exit,
    goes nowhere instead of raising again."""
    with contextlib.suppress(OSError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _exit_now(code: int) -> None:
    """Exit once the command is done, skipping the interpreter's teardown of every module and
    object (hundreds of milliseconds after a run that loaded docker-py and pydantic). The exit
    handlers still run first (open sandboxes closed, logs flushed), then the output is flushed."""
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing more can be said there
            stream.flush()
    os._exit(code)
