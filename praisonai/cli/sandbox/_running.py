"""What ``sandbox run`` and ``sandbox exec`` share: their options, the command's stdin and output,
and a wait on the portal loop that the first SIGINT, SIGTERM or SIGHUP interrupts."""

from __future__ import annotations

import os
import select
import shlex
import signal
import stat
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING, Annotated, Literal, TypeVar

import typer

from praisonai import _portal
from praisonai._errors import ConfigError
from praisonai._limits import DEFAULT_EXEC_TIMEOUT_S, INTERRUPT_CLEANUP_WAIT_S
from praisonai.cli import _output, _signals
from praisonai.cli._help import PROVIDERS

if TYPE_CHECKING:
    from praisonai._types import ExecResult

T = TypeVar("T")

#: Words that mean something to a shell only: a one-word command holding one was likely meant for sh -c.
_SHELL_SYNTAX = frozenset("|&;<>()$`*?~\n")

CommandArg = Annotated[list[str], typer.Argument(metavar="-- COMMAND [ARG]...", show_default=False)]
ComputeOpt = Annotated[
    str | None,
    typer.Option(
        "--compute",
        "-c",
        metavar="NAME",
        help=f"Provider: {PROVIDERS} (default: the environment file's "
        "backend, else docker when it is available, else local under bubblewrap, else local on "
        "this host, unisolated, said on stderr).",
    ),
]
ImageOpt = Annotated[str | None, typer.Option("--image", metavar="IMAGE", help="Image to run (docker).")]
TimeoutOpt = Annotated[
    float,
    typer.Option(
        "--timeout",
        metavar="SECONDS",
        help=f"Seconds before the command is killed (default {DEFAULT_EXEC_TIMEOUT_S:g}); 0: no limit.",
        show_default=False,
    ),
]
EnvOpt = Annotated[
    list[str] | None,
    typer.Option("--env", "-e", metavar="KEY=VALUE", help="An environment variable; repeatable."),
]
NoEnvironmentOpt = Annotated[bool, typer.Option("--no-environment", help="Read no environment file.")]
InteractiveOpt = Annotated[
    bool,
    typer.Option("--interactive", "-i", help="Give the command this standard input (as docker -i)."),
]


def parse_env(pairs: list[str]) -> dict[str, str]:
    env = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise ConfigError(f"--env takes KEY=VALUE, not {pair!r}")
        env[key] = value
    return env


def piped_stdin() -> AsyncIterator[bytes] | None:
    """Stdin's chunks as they come, as ``docker run -i`` gives them, whatever stdin is — a pipe,
    a socket, a file or a device (``< /dev/zero``) — and never read whole first: a command can
    answer each line of a pipe as it arrives. ``None`` for a terminal or a closed stdin (the
    command's stdin is then empty)."""
    try:
        mode = os.fstat(0).st_mode
    except OSError:
        return None
    if os.isatty(0):
        return None
    return _stdin_chunks(waits=stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode))


#: The most of stdin one chunk takes: what is there at once is sent together, up to this.
_STDIN_CHUNK = 1 << 20


async def _stdin_chunks(*, waits: bool) -> AsyncIterator[bytes]:
    """Fd 0's bytes until its end: a pipe's are waited for on the event loop (cancellable, unlike a
    thread blocked in read), a file's or a device's (which the event loop cannot wait for) are read
    in a worker thread."""
    import anyio.to_thread

    ready = select.poll()
    ready.register(0, select.POLLIN)
    while True:
        if waits:
            await anyio.wait_readable(0)
            chunk = _available(ready)
        else:
            chunk = await anyio.to_thread.run_sync(os.read, 0, _STDIN_CHUNK)
        if not chunk:
            return
        yield chunk


def _available(ready: select.poll) -> bytes:
    """What a readable pipe holds now, up to ``_STDIN_CHUNK`` (empty at its end)."""
    parts = [os.read(0, _STDIN_CHUNK)]
    size = len(parts[0])
    while parts[-1] and size < _STDIN_CHUNK and ready.poll(0):
        parts.append(os.read(0, _STDIN_CHUNK - size))
        size += len(parts[-1])
    return b"".join(parts)


def write(stream: Literal["stdout", "stderr"], chunk: bytes) -> None:
    """A chunk of the command's output, to the same stream of ours, at once, byte for byte: the
    command's own output, as ``docker run`` and ``ssh`` pass it (a user runs ``sandbox run`` to
    get exactly those bytes, escape sequences and all). It is the one thing the CLI writes that
    does not go through :func:`praisonai.cli._output.safe`; what the CLI says *about* the run
    (notes, errors) does.

    Raises:
        ReaderGone: that stream's reader closed it (``| head``); the run stops there."""
    target = sys.stdout.buffer if stream == "stdout" else sys.stderr.buffer
    try:
        target.write(chunk)
        target.flush()
    except BrokenPipeError as exc:
        raise ReaderGone(stream) from exc


def ended(result: ExecResult, command: list[str], timeout: float | None) -> int:
    """The exit status for the command's result (its own), after saying on stderr that it timed
    out, or, for a one-word shell line that was not found, how to run it as one."""
    if result.timed_out:
        _output.error(f"command timed out after {timeout:g}s and was killed")
    elif result.exit_code == 127 and len(command) == 1 and _SHELL_SYNTAX & set(command[0]):
        line = shlex.join(command)
        _output.note(f"hint: {command[0]!r} ran as one program name; for a shell line use: -- sh -c {line}")
    return result.exit_code


class ReaderGone(Exception):
    """The reader of our stdout or stderr closed it: the run ends as a program that SIGPIPE
    killed (exit status 141), its command stopped. Not an ``OSError``: click turns a broken pipe
    into exit status 1."""


class Interrupted(BaseException):
    """Raised in the main thread by the first SIGINT, SIGTERM or SIGHUP of a run."""


class Signal:
    name = ""
    number = 0


@contextmanager
def signals_interrupt() -> Iterator[Signal]:
    """While the block runs, the first SIGINT/SIGTERM/SIGHUP raises ``Interrupted`` in it (and
    says which in the yielded record); later ones are ignored, so clean-up is not cut short."""
    caught = Signal()

    def handler(number: int, frame: FrameType | None) -> None:
        if caught.number:
            return
        caught.number, caught.name = number, signal.Signals(number).name
        raise Interrupted

    with _signals.handling(handler):
        yield caught


def wait(fn: Callable[[], Awaitable[T]]) -> T:
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
    except Interrupted:
        if future.cancel():
            finished.wait(INTERRUPT_CLEANUP_WAIT_S)
        raise
