"""A terminal in a Daytona sandbox (``Capability.PTY``): the SDK's own PTY session
(``process.create_pty_session``: a WebSocket to the toolbox's ``/process/pty/create-connect``),
resized and killed by its REST calls.

The daemon starts the sandbox's login shell (``<shell> -i -l``, zsh in the default snapshots) in
``cwd`` with the sandbox's env (as ``process.exec`` has it) plus ``envs``; it takes no command. So
a terminal for a command types one line into that shell, which ``exec``s a ``sh`` that prints a
one-time start token and then ``exec``s the command: the shell's banner, prompt and the echo of
that line come before the token and are dropped, and the command's exit code is the session's.
The command's argv and the token travel in ``envs`` (a WebSocket subprotocol, never a URL or
the typed line) and are unset before the command starts.

Everything the terminal starts carries ``PRAISONAI_PTY=<token>`` in its environment: ``close``
ends the session (the daemon kills the shell's tree) and then kills, with one ``process.exec``,
every process carrying the marker (also those that left the tree with ``setsid``). While the
terminal is open the sandbox's activity is renewed every ``renew_s``, as an exec's is: Daytona
does not count what runs inside a sandbox as activity.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import secrets
import shlex
from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from praisonai._errors import ConfigError, InstanceNotFoundError, PathNotFoundError
from praisonai.compute.abilities.pty import KILL_MARKED_SH, PTY_MARKER, Pty, env_lines
from praisonai.compute.providers.daytona._client import translated

_RUN, _GO = "PRAISONAI_PTY_RUN", "PRAISONAI_PTY_GO"
#: The line typed into the daemon's shell for a command: no value in it (they are in the env),
#: a leading space keeps it out of the shell's history (bash's ignorespace, zsh's
#: hist_ignore_space), and the start token is printed only by the ``sh`` it execs, so the
#: line's echo never contains it.
_LAUNCH = f' exec /bin/sh -c \'g=${_GO} r=${_RUN}; unset {_GO} {_RUN}; printf %s "$g"; eval "exec $r"\'\n'
_CLOSE_S = 60  # what close waits for the sandbox to kill the terminal's processes
#: The daemon refuses a terminal's side over this (its ioctl limit).
MAX_SIDE = 1000


class DaytonaPty(Pty):
    """An open Daytona PTY session (``handle``: the SDK's ``AsyncPtyHandle``); ``stack`` holds
    the client and sandbox it lives on, released by :meth:`close`."""

    def __init__(
        self, stack: contextlib.AsyncExitStack, sandbox: Any, marker: str, token: str | None
    ) -> None:
        self._stack, self._sandbox, self._marker = stack, sandbox, marker
        self._token = None if token is None else token.encode()
        self._seen = b""  # output before the start token (only its tail is kept)
        self._out: MemoryObjectSendStream[bytes]
        self._in: MemoryObjectReceiveStream[bytes]
        self._out, self._in = anyio.create_memory_object_stream[bytes](math.inf)
        self._handle: Any = None
        self._tending: asyncio.Task[None] | None = None
        self._closed = False

    def on_data(self, data: bytes) -> None:
        """The SDK's output callback: the command's output, from its start token on."""
        if self._token is not None:
            self._seen += data
            before, found, data = self._seen.partition(self._token)
            if not found:
                self._seen = before[-len(self._token) :]  # a token split across two chunks
                return
            self._token, self._seen = None, b""
        if data:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                self._out.send_nowait(data)

    def started(self, handle: Any, renew_s: float) -> None:
        """Attach the open session; its output ends, and renewal stops, when it ends."""
        self._handle = handle
        self._tending = asyncio.get_running_loop().create_task(self._tend(renew_s))

    async def _tend(self, renew_s: float) -> None:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self._renew, renew_s)
            with contextlib.suppress(Exception):  # an ended connection is an ended terminal
                await self._handle.wait()
            self._out.close()
            tasks.cancel_scope.cancel()

    async def _renew(self, renew_s: float) -> None:
        while True:
            await anyio.sleep(renew_s)
            with contextlib.suppress(Exception):  # a missed renewal is not the terminal's failure
                await self._sandbox.refresh_activity()

    async def _send(self, data: bytes) -> None:
        if self._closed or not self._handle.is_connected():
            return  # the terminal ended: its input goes nowhere, as on a closed pty
        with translated("open_pty"):
            await self._handle.send_input(data)

    async def _receive(self) -> bytes:
        try:
            return await self._in.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            return b""

    async def resize(self, cols: int, rows: int) -> None:
        from daytona import DaytonaError
        from daytona.common.pty import PtySize

        checked_size(cols, rows)
        if self._closed or not self._handle.is_connected():
            return  # ended meanwhile: no size to set
        try:
            await self._handle.resize(PtySize(rows=rows, cols=cols))
        except DaytonaError as exc:
            if self._handle.is_connected():
                with translated("resize"):
                    raise exc

    async def wait(self) -> int:
        result = await self._handle.wait()
        return -1 if result.exit_code is None else int(result.exit_code)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with anyio.CancelScope(shield=True):
            try:
                await self._end()
            finally:
                self.release()
                await self._stack.aclose()

    def release(self) -> None:
        """Close the output queue (also of a session that never opened)."""
        self._out.close()
        self._in.close()

    async def _end(self) -> None:
        """Kill the session and every process carrying the marker, then hang up."""
        from daytona import DaytonaError

        with contextlib.suppress(DaytonaError):  # it ended already: the daemon forgot it
            await self._handle.kill()
        kill = shlex.join(["sh", "-c", KILL_MARKED_SH, "sh", self._marker])
        with contextlib.suppress(InstanceNotFoundError), translated("close"):  # gone: nothing runs
            await self._sandbox.process.exec(kill, timeout=_CLOSE_S)
        await self._handle.disconnect()
        if self._tending is not None:
            self._tending.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._tending


class DaytonaTerminals:
    """Terminals in a provider's Daytona sandboxes (``Terminals``), from its collaborators:
    ``sandbox(instance_id, op)`` enters an instance's ``AsyncSandbox`` (with the client it lives
    on; resumed when paused), ``path(sandbox, path)`` resolves a path against its working dir,
    and ``renew_s`` is how often an open terminal renews the sandbox's activity."""

    def __init__(
        self,
        *,
        sandbox: Callable[[str, str], AbstractAsyncContextManager[Any]],
        path: Callable[[Any, str], str],
        renew_s: float,
    ) -> None:
        self._sandbox, self._path, self._renew_s = sandbox, path, renew_s

    async def open(
        self,
        instance_id: str,
        command: list[str] | None,
        cols: int,
        rows: int,
        cwd: str | None,
        env: Mapping[str, str],
    ) -> DaytonaPty:
        """A :class:`DaytonaPty` running ``command`` (``None``: the daemon's login shell) on a
        terminal of ``cols`` x ``rows`` in ``cwd`` (relative to the instance's working
        directory), with the sandbox's env plus ``env``.

        Raises:
            ConfigError: a side over Daytona's ``MAX_SIDE``, or an env name that is no identifier.
            PathNotFoundError: ``cwd`` is not a directory in the sandbox.
        """
        checked_size(cols, rows)
        env_lines(env)  # refuses a name that is no identifier, as the other providers do
        marker, token = secrets.token_hex(16), (None if command is None else secrets.token_hex(16))
        envs = {"TERM": "xterm", **env, PTY_MARKER: marker}
        if command is not None:
            envs.update({_RUN: shlex.join(command), _GO: str(token)})
        stack, pty = contextlib.AsyncExitStack(), None
        try:
            sandbox = await stack.enter_async_context(self._sandbox(instance_id, "open_pty"))
            pty = DaytonaPty(stack, sandbox, f"{PTY_MARKER}={marker}", token)
            handle = await _create(sandbox, pty, self._path(sandbox, cwd or "."), envs, (cols, rows))
        except BaseException:
            if pty is not None:
                pty.release()
            with anyio.CancelScope(shield=True):
                await stack.aclose()
            raise
        pty.started(handle, self._renew_s)
        if command is not None:
            try:
                with translated("open_pty", instance_id=instance_id):
                    await handle.send_input(_LAUNCH.encode())
            except BaseException:
                await pty.close()
                raise
        return pty


async def _create(
    sandbox: Any, pty: DaytonaPty, cwd: str, envs: dict[str, str], size: tuple[int, int]
) -> Any:
    """The SDK's ``AsyncPtyHandle`` of a new session; the daemon's failure to start the shell
    (a 500 without a reason) is ``PathNotFoundError`` when ``cwd`` is missing."""
    from daytona import DaytonaError
    from daytona.common.pty import PtySize

    try:
        return await sandbox.process.create_pty_session(
            id=f"praisonai-{secrets.token_hex(8)}",
            on_data=pty.on_data,
            cwd=cwd,
            envs=envs,
            pty_size=PtySize(rows=size[1], cols=size[0]),
        )
    except DaytonaError as exc:
        with translated("open_pty"):
            found = await sandbox.process.exec(f"test -d {shlex.quote(cwd)}", timeout=60)
        if found.exit_code != 0:
            raise PathNotFoundError(
                f"working directory {cwd} does not exist in the sandbox", op="open_pty"
            ) from exc
        with translated("open_pty"):
            raise exc


def checked_size(cols: int, rows: int) -> None:
    """Refuse a side the daemon refuses (over ``MAX_SIDE``), in one sentence of ours."""
    if max(cols, rows) > MAX_SIDE:
        raise ConfigError(
            f"Daytona's terminals are at most {MAX_SIDE} x {MAX_SIDE}, not {cols} x {rows}", op="open_pty"
        )
