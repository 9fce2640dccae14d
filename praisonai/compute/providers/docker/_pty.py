"""A terminal in a docker instance (``Capability.PTY``): an exec with a tty, attached through its
hijacked socket; resized by the exec resize API. It runs as the instance's commands do (their uid,
``compute.separation``; the container's cgroup and network); close kills, inside the container,
every process carrying its marker (also those that left its session)."""

from __future__ import annotations

import contextlib
import secrets
import socket
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio
import anyio.to_thread

from praisonai._errors import InstanceNotFoundError
from praisonai.compute.abilities.pty import BOUND_START, KILL_MARKED_SH, Pty, env_lines
from praisonai.compute.providers.docker._client import container_name, exec_errors
from praisonai.compute.separation import dropped, own_shell

#: Every process a terminal starts carries ``<name>=pty<token>``: close finds and kills them, and
#: the instance's watchdog counts them as a command of the user's (its process-limit defence too).
PTY_MARKER = "PRAISONAI_EXEC_ID"
_CHUNK = 64 * 1024
_POLL_S = 0.05  # how often wait() asks the engine whether the exec ended


class DockerPty(Pty):
    """The exec ``argv`` on a tty of ``cols`` x ``rows`` in ``instance_id``'s container."""

    def __init__(
        self,
        api: Any,
        instance_id: str,
        argv: list[str],
        *,
        cwd: str | None,
        env: Mapping[str, str],
        cols: int,
        rows: int,
    ) -> None:
        self._api, self._id, self._container = api, instance_id, container_name(instance_id)
        self._marker = f"{PTY_MARKER}=pty{secrets.token_hex(16)}"
        environment = {**env, PTY_MARKER: self._marker.split("=", 1)[1]}
        with exec_errors(instance_id):
            self._exec_id = api.exec_create(
                self._container,
                argv,
                stdin=True,
                tty=True,
                environment=environment,
                workdir=cwd,
            )["Id"]
            stream = api.exec_start(self._exec_id, socket=True, tty=True)
        self._sock: socket.socket = getattr(stream, "_sock", stream)
        self._sock.setblocking(False)
        self._closed = False

    async def _send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                view = view[self._sock.send(view) :]
            except BlockingIOError:
                await anyio.wait_writable(self._sock)

    async def _receive(self) -> bytes:
        while not self._closed:
            try:
                return self._sock.recv(_CHUNK)
            except BlockingIOError:
                await anyio.wait_readable(self._sock)
            except OSError:  # the engine hung up: the instance went away
                return b""
        return b""

    async def resize(self, cols: int, rows: int) -> None:
        if not self._closed:
            await anyio.to_thread.run_sync(self._resize, cols, rows)

    def _resize(self, cols: int, rows: int) -> None:
        import docker

        with contextlib.suppress(docker.errors.APIError):  # its program ended meanwhile: no size to set
            self._api.exec_resize(self._exec_id, height=rows, width=cols)

    async def wait(self) -> int:
        while True:
            state = await anyio.to_thread.run_sync(self._api.exec_inspect, self._exec_id)
            if not state.get("Running"):
                code = state.get("ExitCode")
                return -1 if code is None else int(code)
            await anyio.sleep(_POLL_S)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as draining:
                # output nobody reads must flow while the kill runs: with it backed up the engine
                # cannot finish the killed program's exec, and the kill's own exec waits behind it
                draining.start_soon(self._drain)
                await anyio.to_thread.run_sync(self._kill)
                draining.cancel_scope.cancel()
        self._sock.close()

    async def _drain(self) -> None:
        """Read and drop the terminal's output until it ends (a reader still waiting on the
        socket returns once it wakes, the terminal being closed: then this one reads)."""
        while True:
            try:
                if not self._sock.recv(_CHUNK):
                    return
            except BlockingIOError:
                try:
                    await anyio.wait_readable(self._sock)
                except anyio.BusyResourceError:
                    await anyio.sleep(_POLL_S)
            except OSError:
                return

    def _kill(self) -> None:
        with contextlib.suppress(InstanceNotFoundError), exec_errors(self._id):  # gone: nothing runs
            self._start_kill()

    def _start_kill(self) -> None:
        kill = self._api.exec_create(self._container, ["/bin/sh", "-c", KILL_MARKED_SH, "sh", self._marker])[
            "Id"
        ]
        self._api.exec_start(kill)


class DockerTerminals:
    """Terminals in one engine's containers (``Terminals``): ``connect`` gives the engine's
    docker-py client, ``command_user`` an instance's command user (``compute.separation``;
    ``None``: the container's), ``path`` an instance path as an absolute one in the container,
    ``spool`` the helper's spool there (the bound env is its ``env`` file)."""

    def __init__(
        self,
        connect: Callable[[], Any],
        command_user: Callable[[str], Awaitable[str | None]],
        path: Callable[[str, str], Awaitable[str]],
        spool: Callable[[str], str],
    ) -> None:
        self._connect, self._command_user, self._path, self._spool = connect, command_user, path, spool

    async def open(
        self,
        instance_id: str,
        command: list[str] | None,
        cols: int,
        rows: int,
        cwd: str | None,
        env: Mapping[str, str],
    ) -> DockerPty:
        """A :class:`DockerPty` running ``command`` (``None``: bash, else sh, as a login shell)
        as the instance's command user, in ``cwd`` (relative to the working dir), with the
        instance's bound env and ``env`` over it. The start runs as root (the spool is root's)."""
        env_lines(env)  # a name that is no identifier is refused in one sentence
        user, where = await self._command_user(instance_id), await self._path(instance_id, cwd or ".")
        shell = ["/bin/sh", "-c", 'exec "$(command -v bash || echo /bin/sh)" -i']
        start = ["/bin/sh", "-c", BOUND_START, "sh", str(cols), str(rows), f"{self._spool(instance_id)}/env"]
        program = [*start, *dropped(user, own_shell(command or shell))]
        environment = {"TERM": "xterm", **env, "PRAISONAI_PTY_KEEP": " ".join(env)}
        return await anyio.to_thread.run_sync(  # connecting blocks too: in the worker thread
            lambda: DockerPty(
                self._connect(), instance_id, program, cwd=where, env=environment, cols=cols, rows=rows
            )
        )
