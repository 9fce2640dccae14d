"""A way in: an interactive terminal (a pseudo-terminal) in a running instance. Turned on by
``Capability.PTY``.

A provider with terminals holds a :class:`Terminals` part (``provider.terminals``) whose ``open``
returns a :class:`Pty`: the process runs under the same isolation as the instance's commands (same
user, cgroup, network, sandbox), attached to a fresh pseudo-terminal of ``cols`` x ``rows``.
Without one ``open_pty`` refuses with one sentence.
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from types import TracebackType
from typing import Protocol

import anyio

from praisonai import _limits
from praisonai._errors import ConfigError, PraisonAIError
from praisonai._limits import PTY_MAX_SIDE

#: ``sh -c`` code killing, where it runs (inside a container, on an SSH host), every process whose
#: environment holds exactly ``$1`` (a terminal's ``NAME=token`` marker), sweeping again while
#: forks race the sweep. Run by the provider, never by the terminal's own processes.
KILL_MARKED_SH = (
    "for _ in 1 2 3 4 5 6 7 8 9 10; do "
    'p=$(grep -lzx -- "$1" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3); '
    '[ -z "$p" ] && break; kill -9 $p 2>/dev/null; done; true'
)
#: ``sh -c BOUND_START sh COLS ROWS ENV_FILE PROGRAM...``: the tty's size, set before the program
#: starts (a resize after the start races a short program's exit), the instance's bound env from
#: ENV_FILE (the call's own values kept: ``$PRAISONAI_PTY_KEEP`` names them, each checked by
#: :func:`env_lines`), then the program in its place. For providers whose exec takes an env.
BOUND_START = (
    'stty cols "$1" rows "$2" 2>/dev/null; b=$3; shift 3; '
    'if [ -r "$b" ]; then for n in $PRAISONAI_PTY_KEEP; do eval "k_$n=\\${$n}"; done; '
    'set -a; . "$b"; set +a; '
    'for n in $PRAISONAI_PTY_KEEP; do eval "export $n=\\${k_$n}"; unset "k_$n"; done; fi; '
    'unset PRAISONAI_PTY_KEEP b; exec "$@"'
)


class Pty(abc.ABC):
    """An open terminal in an instance: write its input, read its output, resize it, wait for its
    exit code; :meth:`close` kills the whole process tree it started. An async context manager
    (closing on exit) and an async iterator over output chunks (ending when the terminal closes)."""

    #: Called on every input and output, so that the idle watchdog counts a used terminal as use.
    on_activity: Callable[[], None] = staticmethod(lambda: None)

    async def write(self, data: bytes) -> None:
        """Send ``data`` to the terminal as typed keys (``b"\\x03"`` is Ctrl-C)."""
        self.on_activity()
        await self._send(bytes(data))

    async def read(self) -> bytes:
        """The next output chunk, as soon as there is one; ``b""`` once the terminal has closed."""
        chunk = await self._receive()
        self.on_activity()
        return chunk

    @abc.abstractmethod
    async def _send(self, data: bytes) -> None:
        """Write ``data`` to the terminal's input."""

    @abc.abstractmethod
    async def _receive(self) -> bytes:
        """Read the next output chunk; ``b""`` at the end."""

    @abc.abstractmethod
    async def resize(self, cols: int, rows: int) -> None:
        """Set the terminal's size; its program receives SIGWINCH."""

    @abc.abstractmethod
    async def wait(self) -> int:
        """The exit code of the terminal's program, once it ended (128+N when killed by signal N)."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Kill every process the terminal started (its children too) and release it. Idempotent."""

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._chunks()

    async def _chunks(self) -> AsyncIterator[bytes]:
        while chunk := await self.read():
            yield chunk

    async def __aenter__(self) -> Pty:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()


#: The marker every process a terminal starts carries in its environment (``NAME=<token>``):
#: close finds by it those that left the terminal's session or group.
PTY_MARKER = "PRAISONAI_PTY"
#: Output chunks a vendor terminal keeps for its reader: a fuller buffer holds the SDK's stream
#: (and so the program, as a terminal nobody reads holds it): output nobody reads cannot fill memory.
BUFFERED_CHUNKS = 256


class StreamedPty(Pty):
    """A vendor SDK's terminal whose output a task of its own puts on a bounded stream and whose
    end it reports (:meth:`_ended_with`). A subclass sends input, resizes, and says how to
    :meth:`_kill` the terminal's processes and :meth:`_release` the SDK's handle."""

    def __init__(self) -> None:
        self._sink, self._output = anyio.create_memory_object_stream[bytes](BUFFERED_CHUNKS)
        self._code: int | None = None
        self._failure: PraisonAIError | None = None
        self._ended = anyio.Event()
        self._closed = False

    @property
    def _live(self) -> bool:
        """Neither closed nor ended: input and a new size still reach a program."""
        return not (self._closed or self._ended.is_set())

    async def take(self, chunk: bytes) -> None:
        """Queue an output chunk for the reader: awaited, so a full buffer holds the vendor's
        stream; dropped once the terminal is closed."""
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await self._sink.send(bytes(chunk))

    def _ended_with(self, code: int | None, failure: PraisonAIError | None = None) -> None:
        """The program ended with ``code`` (``None``: unknown; ``failure`` says why)."""
        self._code, self._failure = code, failure
        self._ended.set()

    async def _receive(self) -> bytes:
        if self._closed:
            return b""
        try:
            return await self._output.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            return b""

    async def wait(self) -> int:
        """The program's exit code (128+N when killed by signal N); -1 when closed before its end
        was reported."""
        await self._ended.wait()
        if self._code is None:
            if self._failure is not None:
                raise self._failure
            return -1
        return self._code

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._output.close()  # output now goes nowhere: a stream held by a full buffer goes on
        with anyio.CancelScope(shield=True):
            with anyio.move_on_after(_limits.KILL_GRACE_S), contextlib.suppress(PraisonAIError):
                await self._kill()
            with anyio.move_on_after(_limits.KILL_GRACE_S):
                await self._ended.wait()  # the vendor reports the end: its task finishes cleanly
            await self._release()

    @abc.abstractmethod
    async def _kill(self) -> None:
        """Kill, inside the instance, every process the terminal started."""

    @abc.abstractmethod
    async def _release(self) -> None:
        """Let go of the SDK's handle and stop this terminal's own tasks."""


class Terminals(Protocol):
    """A provider's part that opens terminals in its instances (``provider.terminals``); the
    public ``open_pty`` has checked the id, the command, the size and the env before it asks."""

    async def open(
        self,
        instance_id: str,
        command: list[str] | None,
        cols: int,
        rows: int,
        cwd: str | None,
        env: Mapping[str, str],
    ) -> Pty:
        """Start ``command`` (``None``: the instance's login shell) on a new pseudo-terminal of
        ``cols`` x ``rows`` in ``cwd`` with ``env`` added to the instance's environment."""
        ...


def pty_argv(command: str | Sequence[str] | None) -> list[str] | None:
    """``command`` as an argv (a string runs under ``sh -c``); ``None`` stays ``None`` (a shell)."""
    if command is None:
        return None
    if isinstance(command, str):
        return ["/bin/sh", "-c", command]
    argv = [str(part) for part in command]
    if not argv:
        raise ConfigError(
            "the terminal's command is empty; give a program to run, or none for a shell", op="open_pty"
        )
    return argv


def pty_size(cols: object, rows: object) -> tuple[int, int]:
    """``(cols, rows)`` checked: whole numbers from 1 to ``PTY_MAX_SIDE``."""
    for name, value in (("cols", cols), ("rows", rows)):
        if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= PTY_MAX_SIDE:
            raise ConfigError(
                f"the terminal's {name} must be a whole number from 1 to {PTY_MAX_SIDE}, not {value!r}",
                op="open_pty",
            )
    return cols, rows  # type: ignore[return-value]


def env_lines(env: Mapping[str, str]) -> bytes:
    """``env`` as ``NAME='value'`` lines for ``sh``'s ``.``; a name that is no identifier is refused."""
    import shlex

    for name in env:
        if not name.isidentifier():
            raise ConfigError(
                f"{name!r} is not an environment variable name; use letters, digits and _", op="open_pty"
            )
    return "".join(f"{name}={shlex.quote(value)}\n" for name, value in env.items()).encode()
