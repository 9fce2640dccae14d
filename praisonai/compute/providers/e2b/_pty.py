"""A terminal in an E2B instance (``Capability.PTY``): the SDK's own ``sandbox.pty``, which
starts a process on a pseudo-terminal through envd (a ``Start`` with a ``pty``), types into it
(``send_stdin``), resizes it (``resize``: envd's ``Update``) and streams its output as bytes.

The SDK's ``pty.create`` always runs ``/bin/bash -i -l`` and takes no command. The program is
started by that bash itself, through ``PROMPT_COMMAND``, which an interactive bash runs after its
startup files and before its first prompt (so before it reads any input): it unsets itself, enters
the working directory, loads the env bound by ``bind_env`` (the call's env still wins, as for
exec) and ``exec``s the program, which keeps the pid envd reports and whose exit code envd sends.
Without a command that bash, a login shell, is the terminal's shell. So the terminal runs as
E2B's commands do: the sandbox's default user under ``bash -l``, with the sandbox's env and the
instance's bound env. A template whose startup files set ``PROMPT_COMMAND`` themselves would
override it (E2B's templates do not).

Every process the terminal starts carries its marker (``PRAISONAI_PTY=<token>``) in its
environment; close kills, inside the sandbox, every process carrying it (also those that left
its session), then the program by pid.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import shlex
from collections.abc import Callable, Mapping
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from praisonai import _limits
from praisonai._errors import PraisonAIError
from praisonai.compute.abilities.pty import KILL_MARKED_SH, Pty
from praisonai.compute.providers.e2b._errors import translated
from praisonai.compute.providers.e2b._exec import bound_env

PTY_MARKER = "PRAISONAI_PTY"
#: Output chunks kept for the reader: a fuller buffer holds the SDK's stream (and envd, and the
#: program, as a terminal nobody reads holds it), so output nobody reads cannot fill memory.
_BUFFERED_CHUNKS = 256


class E2BPty(Pty):
    """The envd process ``handle`` (an ``AsyncCommandHandle`` of ``sandbox.pty``) whose output
    arrives on ``output``; ``marker`` is in the environment of everything it starts, and
    ``on_use`` runs on every input and output (the provider renews the sandbox from it)."""

    def __init__(
        self,
        sandbox: Any,
        handle: Any,
        marker: str,
        output: tuple[MemoryObjectSendStream[bytes], MemoryObjectReceiveStream[bytes]],
        on_use: Callable[[], None],
    ) -> None:
        self._sandbox, self._handle, self._marker, self._on_use = sandbox, handle, marker, on_use
        self._sink, self._output = output
        self._code: int | None = None
        self._failure: PraisonAIError | None = None
        self._ended = anyio.Event()
        self._closed = False
        # The SDK's handle follows envd's stream in an asyncio task of its own; this one turns its
        # end into an exit code and the end of the output.
        self._watcher = asyncio.ensure_future(self._watch())

    async def _watch(self) -> None:
        import e2b

        try:
            with translated("pty"):
                try:
                    self._code = (await self._handle.wait()).exit_code
                except e2b.CommandExitException as exc:  # a non-zero exit: the SDK raises it
                    self._code = exc.exit_code
        except PraisonAIError as exc:  # the stream broke: wait() reports it
            self._failure = exc
        finally:
            self._sink.close()  # read() returns b"" once the output taken so far is read
            self._ended.set()

    async def _send(self, data: bytes) -> None:
        if self._closed or self._ended.is_set():
            return  # typed into a terminal that ended: nobody reads it
        self._on_use()
        with translated("pty"):
            await self._sandbox.pty.send_stdin(self._handle.pid, data)

    async def _receive(self) -> bytes:
        if self._closed:
            return b""
        try:
            chunk = await self._output.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            return b""
        self._on_use()
        return chunk

    async def resize(self, cols: int, rows: int) -> None:
        from e2b.sandbox.commands.command_handle import PtySize

        if self._closed or self._ended.is_set():
            return
        with contextlib.suppress(PraisonAIError), translated("pty"):  # it ended meanwhile: no size
            await self._sandbox.pty.resize(self._handle.pid, PtySize(rows=rows, cols=cols))

    async def wait(self) -> int:
        """The program's exit code (envd reports a kill by signal as -1: taken as SIGKILL's 137)."""
        await self._ended.wait()
        if self._code is None:
            if self._failure is not None:
                raise self._failure
            return -1  # closed before its end was reported
        return self._code if self._code >= 0 else 128 + 9

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._output.close()  # output now goes nowhere: a stream held by a full buffer goes on
        with anyio.CancelScope(shield=True):
            with anyio.move_on_after(_limits.KILL_GRACE_S), contextlib.suppress(PraisonAIError):
                await self._kill()
            with anyio.move_on_after(_limits.KILL_GRACE_S):
                await self._ended.wait()  # envd reports the end: the watcher finishes cleanly
            await self._handle.disconnect()
            self._watcher.cancel()

    async def _kill(self) -> None:
        """Every process carrying the marker (run as the sandbox's commands run), then the pid."""
        import e2b

        kill = shlex.join(["sh", "-c", KILL_MARKED_SH, "sh", self._marker])
        with translated("pty"):
            with contextlib.suppress(e2b.CommandExitException):
                await self._sandbox.commands.run(kill, timeout=_limits.KILL_GRACE_S)
            if not self._ended.is_set():
                await self._sandbox.pty.kill(self._handle.pid)


def start_line(argv: list[str] | None, cwd: str, env_file: str, names: list[str]) -> str:
    """The ``PROMPT_COMMAND`` starting the terminal's program (see the module docstring): a
    missing ``cwd`` or a program that cannot be run ends the terminal (status 1, 126 or 127) with
    bash's message on it, rather than leaving a shell in its place."""
    enter = f"unset PROMPT_COMMAND; cd -- {shlex.quote(cwd)} || exit 1; {bound_env(env_file, names)}"
    return enter if argv is None else f"{enter}exec {shlex.join(argv)}; exit $?"


async def open_e2b_pty(
    sandbox: Any,
    argv: list[str] | None,
    cwd: str,
    env: Mapping[str, str],
    env_file: str,
    size: tuple[int, int],
    on_use: Callable[[], None],
) -> E2BPty:
    """``argv`` (``None``: the login shell) on a terminal of ``size`` (cols, rows) in ``sandbox``
    (an ``e2b.AsyncSandbox``), in ``cwd``, with ``env`` added (sent in envd's request body, never
    on a command line) and the bound env from ``env_file``; ``on_use``: see :class:`E2BPty`."""
    from e2b.sandbox.commands.command_handle import PtySize

    marker = f"{PTY_MARKER}={secrets.token_hex(16)}"
    envs = {
        "TERM": "xterm",
        **env,
        "PROMPT_COMMAND": start_line(argv, cwd, env_file, list(env)),
        PTY_MARKER: marker.split("=", 1)[1],
    }
    pty_size = PtySize(rows=size[1], cols=size[0])
    sink, output = anyio.create_memory_object_stream[bytes](_BUFFERED_CHUNKS)

    async def take(chunk: bytes) -> None:  # the SDK awaits it: a full buffer holds its stream
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):  # closed
            await sink.send(bytes(chunk))

    try:
        with translated("open_pty"):
            # timeout=0: the stream has no deadline (the SDK's default would end it at 60 s)
            handle = await sandbox.pty.create(pty_size, on_data=take, envs=envs, timeout=0)
    except BaseException:
        sink.close()
        output.close()
        raise
    return E2BPty(sandbox, handle, marker, (sink, output), on_use)
