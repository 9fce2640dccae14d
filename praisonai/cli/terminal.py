"""``praisonai compute shell ID [-- COMMAND]``: an interactive terminal in a running instance, as
``docker exec -it`` opens one (``praisonai compute logs`` is ``cli/logs.py``).

The shell puts this terminal in raw mode (every key, Ctrl-C included, goes to the instance) and
restores it on every way out: the program's exit, the instance dying, SIGTERM/SIGHUP, an error.
A resize of this terminal (SIGWINCH) resizes the instance's. The exit code is the program's.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import termios
import tty
from types import FrameType
from typing import Annotated

import anyio
import typer

from praisonai import _portal
from praisonai._errors import ConfigError, UnsupportedFeatureError
from praisonai._types import Capability
from praisonai.cli import _signals
from praisonai.cli._help import PlainCommand
from praisonai.compute.abilities.pty import Pty
from praisonai.compute.base import ComputeProvider

InstanceArg = Annotated[
    str, typer.Argument(metavar="INSTANCE_ID", help="The running instance.", show_default=False)
]
_KEYS = 4096


def shell(
    instance_id: InstanceArg,
    command: Annotated[
        list[str] | None,
        typer.Argument(metavar="[-- COMMAND]...", help="Run this instead of a shell.", show_default=False),
    ] = None,
) -> None:
    """Open an interactive terminal in a running instance; exits with its program's exit code."""
    if not os.isatty(sys.stdin.fileno()):
        raise ConfigError(
            "praisonai compute shell needs a terminal on stdin; run it from an interactive terminal"
        )
    provider = provider_for(instance_id, Capability.PTY, "interactive terminals")
    cols, rows = shutil.get_terminal_size()
    env = {"TERM": os.environ.get("TERM", "xterm")}
    pty = _portal.call(
        lambda: provider.open_pty(instance_id, command=command or None, cols=cols, rows=rows, env=env)
    )
    raise typer.Exit(_attached(pty))


def _attached(pty: Pty) -> int:
    """Bridge this terminal to ``pty`` until its program ends; the terminal's mode is restored and
    the pty closed (its processes killed) whatever happens."""
    stdin = sys.stdin.fileno()
    saved = termios.tcgetattr(stdin)

    def resized(signum: int, frame: FrameType | None) -> None:
        _portal.submit(pty.resize, *shutil.get_terminal_size())

    def stopped(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGWINCH, resized)
    pump = None
    try:
        with _signals.handling(stopped):
            tty.setraw(stdin)
            pump = _portal.submit(_pump, pty, stdin, sys.stdout.fileno())
            return pump.result()
    finally:
        if pump is not None:
            pump.cancel()
        termios.tcsetattr(stdin, termios.TCSADRAIN, saved)
        signal.signal(signal.SIGWINCH, previous)
        _portal.call(pty.close)


async def _pump(pty: Pty, stdin: int, stdout: int) -> int:
    """Keys from ``stdin`` to the pty, its output to ``stdout``, until the pty's output ends."""
    async with anyio.create_task_group() as keys:
        keys.start_soon(_keys, pty, stdin)
        async for chunk in pty:
            await anyio.to_thread.run_sync(_write_all, stdout, chunk)
        keys.cancel_scope.cancel()
    return await pty.wait()


async def _keys(pty: Pty, stdin: int) -> None:
    while True:
        await anyio.wait_readable(stdin)
        data = os.read(stdin, _KEYS)
        if not data:  # this terminal closed: the program gets end-of-file (Ctrl-D)
            await pty.write(b"\x04")
            return
        await pty.write(data)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def provider_for(instance_id: str, needs: Capability, what: str) -> ComputeProvider:
    """The provider of ``instance_id`` (named by its prefix), refusing in one sentence when it
    lacks ``needs`` or does not know the instance."""
    from praisonai.compute.registry import compute_provider
    from praisonai.compute.requests import check_instance_id

    check_instance_id(instance_id)
    provider = compute_provider(instance_id.rsplit("_", 1)[0])
    if needs not in provider.capabilities:
        raise UnsupportedFeatureError(
            f"the {provider.name} provider does not support {what} "
            f"(it lacks the {needs.value!r} capability); `praisonai compute providers` lists each provider's"
        )
    _portal.call(provider.get_status, instance_id)  # an unknown instance: one sentence, from the provider
    return provider


def register(app: typer.Typer) -> None:
    """Add ``shell`` to the ``praisonai compute`` group."""
    app.command("shell", cls=PlainCommand)(shell)
