"""A terminal in a kubernetes instance (``Capability.PTY``): a ``pods/exec`` with ``tty=true`` over
the same WebSocket transport as the helper's (``_transport``): channel 0 its input, 1 its output
(a TTY merges stderr into it), 3 the Status carrying its exit code, 4 its size.

It runs as the instance's commands do: in the pod's container, as their uid (``compute.separation``:
the start below runs as root, which alone may read the spool, and drops to it last), with the pod's
env, the env bound later (the spool's env file, which the helper and sessions source too) and the
instance's working dir. The caller's env travels in a private file in the spool, written through the
helper, sourced and removed before the program starts: pods/exec takes no environment, and a value
on the command line would be visible to every process in the pod. Close kills, inside the pod, every
process carrying the terminal's marker (also those that left its session).
"""

from __future__ import annotations

import contextlib
import secrets
import shlex
import threading
from collections.abc import Awaitable, Callable, Mapping
from typing import Protocol

import anyio
import anyio.to_thread

from praisonai import _limits
from praisonai._errors import PraisonAIError
from praisonai._types import ExecRequest
from praisonai.compute.abilities.pty import KILL_MARKED_SH, Pty, env_lines
from praisonai.compute.providers.kubernetes._transport import PodExecTransport
from praisonai.compute.separation import dropped, own_shell
from praisonai.runtime import Waiter
from praisonai.runtime.pool import ChannelPool

#: Every process a terminal starts carries ``<name>=pty<token>``: close finds and kills them, and
#: the pod's watchdog counts them as a command of the user's (its process-limit defence too).
PTY_MARKER = "PRAISONAI_EXEC_ID"
_KILL_WAIT_S = 30.0  # how long close waits for the kill sweep's exec to end

#: ``sh -c START sh COLS ROWS MARKER TERM BOUND_ENV ENV_FILE CWD PROGRAM...``: set the tty's size
#: before the program starts (a resize after the start races a short program's exit), source the
#: instance's bound env and the terminal's own (then remove that file), mark, and run the program.
#: The marker goes last, so that no env can override it. ENV_FILE is ``-`` when there is none: an
#: empty word can be lost on the way (a query string's blank value).
_START = (
    'stty cols "$1" rows "$2" 2>/dev/null; m=$3 t=$4 b=$5 e=$6 d=$7; shift 7; export TERM="$t"; '
    'if [ -r "$b" ]; then set -a; . "$b"; set +a; fi; '
    'if [ "$e" != - ]; then if [ -r "$e" ]; then set -a; . "$e"; set +a; fi; rm -f -- "$e"; fi; '
    'export "$m"; unset m t b e; cd -- "$d" || exit 1; exec "$@"'
)
#: ``None`` as a command: bash where the image has it, else sh, interactive.
_SHELL = ["/bin/sh", "-c", 'exec "$(command -v bash || echo /bin/sh)" -i']


class KubernetesPty(Pty):
    """A terminal over one exec stream; ``kill`` (blocking) kills what it started, in the pod."""

    def __init__(self, transport: PodExecTransport, kill: Callable[[], None]) -> None:
        self._transport, self._kill = transport, kill
        self._lock = threading.Lock()
        self._out: list[bytes] = []
        self._ended = False  # the stream ended: the program exited, or the connection went
        self._closed = False
        self._waiter: Waiter | None = None
        transport.start(self._feed, self._feed, self._end)

    def _feed(self, data: bytes) -> None:
        """From the reader thread: an output chunk."""
        with self._lock:
            self._out.append(data)
        self._wake()

    def _end(self) -> None:
        with self._lock:
            self._ended = True
        self._wake()

    def _wake(self) -> None:
        with self._lock:
            waiter, self._waiter = self._waiter, None
        if waiter is not None:
            waiter.resolve(None)

    def _armed(self) -> Waiter:
        """The waiter the next change resolves (call with the lock held)."""
        if self._waiter is None:
            self._waiter = Waiter()
        return self._waiter

    async def _send(self, data: bytes) -> None:
        if self._closed:
            return
        # an ended terminal's input goes nowhere; read() says it ended (b"")
        with contextlib.suppress(OSError):
            await anyio.to_thread.run_sync(self._transport.send, data)

    async def _receive(self) -> bytes:
        while True:
            with self._lock:
                if self._out:
                    chunk = b"".join(self._out)
                    self._out.clear()
                    return chunk
                if self._ended or self._closed:
                    return b""
                waiter = self._armed()
            await waiter.wait()

    async def resize(self, cols: int, rows: int) -> None:
        if not self._closed:
            with contextlib.suppress(OSError):  # ended meanwhile: no size to set
                await anyio.to_thread.run_sync(self._transport.resize, cols, rows)

    async def wait(self) -> int:
        """The code from the exec's Status; -1 when the stream ended without one."""
        while True:
            with self._lock:
                if self._ended:
                    code = self._transport.exit_code()
                    return -1 if code is None else code
                waiter = self._armed()
            await waiter.wait()

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with anyio.CancelScope(shield=True), contextlib.suppress(PraisonAIError, OSError):  # pod gone
            await anyio.to_thread.run_sync(self._kill)
        self._transport.close()
        self._wake()


class OpenExec(Protocol):
    """Starts ``argv`` in an instance's pod as a ``pods/exec`` stream (blocking)."""

    def __call__(self, instance_id: str, argv: list[str], *, tty: bool = False) -> PodExecTransport: ...


class PodTerminals:
    """Terminals in a provider's pods (``Terminals``), from its collaborators: ``channels`` the
    instances' helper channels (the caller's env goes through them into the spool), ``open_exec``
    the provider's exec streams, and where an instance's commands run: its ``spool``, its working
    dir (``cwd``: a path as the user wrote it, made absolute) and its ``command_user``."""

    def __init__(
        self,
        channels: ChannelPool,
        open_exec: OpenExec,
        *,
        spool: Callable[[str], str],
        cwd: Callable[[str, str | None], Awaitable[str]],
        command_user: Callable[[str], Awaitable[str | None]],
    ) -> None:
        self._channels, self._open_exec = channels, open_exec
        self._spool, self._cwd, self._command_user = spool, cwd, command_user

    async def open(
        self,
        instance_id: str,
        command: list[str] | None,
        cols: int,
        rows: int,
        cwd: str | None,
        env: Mapping[str, str],
    ) -> KubernetesPty:
        """A terminal in ``instance_id``'s pod running ``command`` (``None``: a shell) on a TTY of
        ``cols`` x ``rows`` in ``cwd`` (default: the working dir), with ``env`` added to the
        instance's (``TERM`` defaults to xterm). Raises as the provider's exec does (no such pod:
        not found)."""
        token = secrets.token_hex(16)
        marker = f"{PTY_MARKER}=pty{token}"
        spool, where = self._spool(instance_id), await self._cwd(instance_id, cwd)
        env_file = f"{spool}/pty-{token}.env" if env else "-"  # "-": none (no empty word: see _START)
        if env:
            text = env_lines(env)
            await self._channels.run(instance_id, lambda ch: ch.write_file(env_file, text))
        # TERM's default here; a TERM of the caller's comes with the rest of its env, in the file
        words = [str(cols), str(rows), marker, "xterm", f"{spool}/env", env_file, where]
        user = await self._command_user(instance_id)
        program = ["/bin/sh", "-c", _START, "sh", *words, *dropped(user, own_shell(command or _SHELL))]
        try:
            transport = await anyio.to_thread.run_sync(
                lambda: self._started(instance_id, program, cols, rows)
            )
        except BaseException:
            if env:  # nothing will read it: it must not stay in the spool
                with anyio.CancelScope(shield=True), contextlib.suppress(PraisonAIError):
                    await self._remove(instance_id, env_file)
            raise

        def kill() -> None:
            sweep = ["/bin/sh", "-c", KILL_MARKED_SH, "sh", marker]
            run_to_end(self._open_exec(instance_id, sweep), _KILL_WAIT_S)

        return KubernetesPty(transport, kill)

    def _started(self, instance_id: str, program: list[str], cols: int, rows: int) -> PodExecTransport:
        """The terminal's exec stream (blocking), told its size at once as ``kubectl exec -t``
        does: a cluster whose image lacks ``stty`` sizes the TTY from that message."""
        transport = self._open_exec(instance_id, program, tty=True)
        with contextlib.suppress(OSError):  # a program that ended already has no size to take
            transport.resize(cols, rows)
        return transport

    async def _remove(self, instance_id: str, path: str) -> None:
        """Remove ``path`` from the spool, as root: only root may write there."""
        line = f"rm -f -- {shlex.quote(path)}"
        request = ExecRequest(line, cwd="/", timeout=_limits.KILL_GRACE_S, privileged=True)
        await self._channels.run(instance_id, lambda ch: ch.exec(request))


def run_to_end(transport: PodExecTransport, timeout: float) -> int | None:
    """Start ``transport`` and wait (blocking) for its end: its exit code, ``None`` if unknown."""
    ended = threading.Event()
    transport.start(lambda _: None, lambda _: None, ended.set)
    ended.wait(timeout)
    transport.close()
    return transport.exit_code()
