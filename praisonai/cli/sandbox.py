"""``praisonai sandbox run``: one command in a fresh instance, which is always removed after.

The instance follows ``.praisonai/environment.yaml`` (found from the working directory) like every
other provisioning path; ``--image`` and ``--env`` are explicit and win over it.

Ctrl-C, SIGTERM and SIGHUP all end the run the same way: the command is cancelled, the instance
removed, and the exit status is 128 + the signal's number (130, 143, 129), as a shell reports it.
"""

from __future__ import annotations

import os
import shlex
import signal
import stat
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated, Literal, TypeVar

import anyio
import typer

from praisonai import _portal
from praisonai._errors import ConfigError
from praisonai._limits import DEFAULT_EXEC_TIMEOUT_S, INTERRUPT_CLEANUP_WAIT_S, check_timeout
from praisonai.cli import _output, _signals
from praisonai.cli._help import PROVIDERS, PlainCommand
from praisonai.cli._options import AllowHostMountsOpt

if TYPE_CHECKING:
    from praisonai._types import ExecResult
    from praisonai.compute.base import ComputeProvider
    from praisonai.sandbox.provisioning import ProvisionPlan

T = TypeVar("T")

app = typer.Typer(help="Run commands in fresh instances.", no_args_is_help=True, rich_markup_mode=None)

#: Words that mean something to a shell only: a one-word command holding one was likely meant for sh -c.
_SHELL_SYNTAX = frozenset("|&;<>()$`*?~\n")


@app.command("run", cls=PlainCommand)
def run(
    command: Annotated[list[str], typer.Argument(metavar="-- COMMAND [ARG]...", show_default=False)],
    compute: Annotated[
        str | None,
        typer.Option(
            "--compute",
            "-c",
            metavar="NAME",
            help=f"Provider: {PROVIDERS} (default: the environment file's "
            "backend, else docker when it is available, else local under bubblewrap, else local on "
            "this host, unisolated, said on stderr).",
        ),
    ] = None,
    image: Annotated[
        str | None, typer.Option("--image", metavar="IMAGE", help="Image to run (docker).")
    ] = None,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            metavar="SECONDS",
            help=f"Seconds before the command is killed (default {DEFAULT_EXEC_TIMEOUT_S:g}); 0: no limit.",
            show_default=False,
        ),
    ] = DEFAULT_EXEC_TIMEOUT_S,
    env: Annotated[
        list[str] | None,
        typer.Option("--env", "-e", metavar="KEY=VALUE", help="An environment variable; repeatable."),
    ] = None,
    environment: Annotated[
        Path | None,
        typer.Option(
            "--environment",
            metavar="FILE",
            help="Environment file (default: .praisonai/environment.yaml, searched up to the repo root).",
        ),
    ] = None,
    no_environment: Annotated[
        bool, typer.Option("--no-environment", help="Read no environment file.")
    ] = False,
    allow_host_mounts: AllowHostMountsOpt = False,
    interactive: Annotated[
        bool,
        typer.Option("--interactive", "-i", help="Give the command this standard input (as docker run -i)."),
    ] = False,
) -> None:
    """Run COMMAND in a new instance, stream its output, and exit with its exit code; the instance
    is removed afterwards, also on Ctrl-C, SIGTERM or SIGHUP.

    COMMAND is a program and its arguments, passed as they are, not a shell line: for pipes,
    redirections or several commands, run a shell yourself, as in sandbox run -- sh -c 'a | b'.

    The command's standard input is empty unless -i is given: then what is piped or redirected
    into praisonai is read to its end and given to the command (a terminal's input is not).

    Examples:

    \b
      praisonai sandbox run -- python3 -c 'print(2+2)'
      praisonai sandbox run -c local -e MODE=ci -- sh -c 'echo "$MODE" | wc -c'
      git diff | praisonai sandbox run -i -- wc -l
    """
    if environment is not None and no_environment:
        raise ConfigError("--environment and --no-environment exclude each other")
    seconds = check_timeout(timeout, "--timeout", none="0") or None  # 0 means no limit here
    from praisonai.compute.requests import check_command_text

    check_command_text(command)  # before an instance is made for a command that cannot run
    fields: dict[str, object] = {"env": _parse_env(env or [])}
    if image:
        fields["image"] = image
    if allow_host_mounts:
        fields["allow_host_mounts"] = True
    stdin = _piped_stdin() if interactive else None

    from praisonai.sandbox.provisioning import plan

    chosen = plan(compute, environment=False if no_environment else environment, resolve=_resolve, **fields)
    provider = chosen.provider
    if chosen.source is not None:
        from praisonai.sandbox.environment import shown_path  # with the file's parser: only if read

        shown, definition = shown_path(chosen.source), chosen.config.definition_hash()
        _output.note(f"environment: {shown} (definition {definition})")
    if compute is None:
        _output.note(f"compute: {_chosen_by_default(provider, chosen.backend)}")

    line = shlex.join(command)
    with (
        _signals_interrupt() as interrupted,
        _output.progress(f"starting a {provider.provider_name} instance") as ready,
    ):
        try:
            result = _wait(lambda: _create_and_run(chosen, line, seconds, stdin, ready))
        except _Interrupted:
            ready()
            _output.note(f"interrupted by {interrupted.name}: the instance was removed")
            raise typer.Exit(128 + interrupted.number) from None
    if result.timed_out:
        _output.error(f"command timed out after {seconds:g}s and was killed")
    elif result.exit_code == 127 and len(command) == 1 and _SHELL_SYNTAX & set(command[0]):
        _output.note(f"hint: {command[0]!r} ran as one program name; for a shell line use: -- sh -c {line}")
    raise typer.Exit(result.exit_code)


async def _create_and_run(
    chosen: ProvisionPlan,
    command: str,
    timeout: float | None,
    stdin: bytes | None,
    ready: Callable[[], None],
) -> ExecResult:
    """Provision, run, remove: one task, so that cancelling it at any point removes the instance
    (a cancelled provision removes what it made; ``finally`` removes the rest).

    Where the provider can, and the config needs no steps before the command, the instance is
    started with the command as its own work and removed when it ends (``docker run --rm``):
    no idle instance, exec helper or removal of a running instance to wait for. A warm instance
    of the same definition (``praisonai compute warm``) is faster still: it is claimed first."""
    from praisonai.compute import warm
    from praisonai.sandbox import AsyncSandbox

    provider, config = chosen.provider, chosen.config
    claimed = await warm.claim(provider, config)  # a warm pool of this definition goes first
    if claimed is None and provider.runs_once(config):
        return await provider.run_once(
            config, command, timeout=timeout, on_output=_write, stdin=stdin, on_start=ready
        )
    info = claimed or await provider.provision(config)  # the file was read once, by plan()
    sandbox = AsyncSandbox(provider, info, owned=True, plan=chosen)
    try:
        ready()
        return await sandbox.exec(command, timeout=timeout, on_output=_write, stdin=stdin)
    finally:
        with anyio.CancelScope(shield=True):
            await sandbox.close()  # the instance never outlives the command


def _resolve(name: object) -> ComputeProvider:
    """The provider named, imported only when a run needs one. ``None``: the default, which a
    person typing a command may take on this host, unisolated, when nothing isolates here (said
    on stderr: see :func:`_chosen_by_default`); the library refuses that."""
    from praisonai.compute.registry import default_compute, resolve_compute

    return default_compute(host=True) if name is None else resolve_compute(name)


#: What the stderr line says when the default fell back to plain local.
UNISOLATED = "on this host, NOT isolated: install docker or bubblewrap to isolate"


def _chosen_by_default(provider: ComputeProvider, backend: str | None) -> str:
    """The provider as the ``compute:`` line names it when no --compute was given: its flavour
    (``local (bubblewrap)``), or plainly that it runs on this host, not isolated."""
    from praisonai.compute.registry import isolates, shown_name

    if backend:
        return f"{shown_name(provider)} (backend from the environment file)"
    return shown_name(provider) if isolates(provider) else f"{provider.provider_name} ({UNISOLATED})"


def _write(stream: Literal["stdout", "stderr"], chunk: bytes) -> None:
    target = sys.stdout.buffer if stream == "stdout" else sys.stderr.buffer
    target.write(chunk)
    target.flush()


def _parse_env(pairs: list[str]) -> dict[str, str]:
    env = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise ConfigError(f"--env takes KEY=VALUE, not {pair!r}")
        env[key] = value
    return env


def _piped_stdin() -> bytes | None:
    """All of stdin when it is a pipe, a socket or a file; ``None`` for a terminal, /dev/null or
    a closed stdin (the command's stdin is then empty)."""
    try:
        mode = os.fstat(0).st_mode
    except OSError:
        return None
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISREG(mode)):
        return None
    return sys.stdin.buffer.read()


# ---- signals -------------------------------------------------------------------------------


class _Interrupted(BaseException):
    """Raised in the main thread by the first SIGINT, SIGTERM or SIGHUP of a run."""


class _Signal:
    name = ""
    number = 0


@contextmanager
def _signals_interrupt() -> Iterator[_Signal]:
    """While the block runs, the first SIGINT/SIGTERM/SIGHUP raises ``_Interrupted`` in it (and
    says which in the yielded record); later ones are ignored, so clean-up is not cut short."""
    caught = _Signal()

    def handler(number: int, frame: FrameType | None) -> None:
        if caught.number:
            return
        caught.number, caught.name = number, signal.Signals(number).name
        raise _Interrupted

    with _signals.handling(handler):
        yield caught


def _wait(fn: Callable[[], Awaitable[T]]) -> T:
    """``await fn()`` on the portal loop. When the wait is interrupted, the task is cancelled and
    its clean-up (a half-made instance removed) awaited, for at most ``INTERRUPT_CLEANUP_WAIT_S``."""
    finished = threading.Event()

    async def task() -> T:
        try:
            return await fn()
        finally:
            finished.set()

    future = _portal.submit(task)
    try:
        return future.result()
    except _Interrupted:
        if future.cancel():
            finished.wait(INTERRUPT_CLEANUP_WAIT_S)
        raise
