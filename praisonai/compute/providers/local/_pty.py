"""A process of a local instance on a pseudo-terminal of this machine (``Capability.PTY``)."""

from __future__ import annotations

import errno
import fcntl
import os
import secrets
import struct
import termios
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path

import anyio

from praisonai._limits import KILL_GRACE_S
from praisonai.compute.abilities.pty import PTY_MARKER, Pty
from praisonai.compute.providers.local._launch import base_env, forget_if_empty, isolated_argv
from praisonai.compute.providers.local._process import INSTANCE_MARKER, exit_status, kill_carrying, kill_group
from praisonai.compute.providers.local._record import Instance
from praisonai.runtime import owner

_CHUNK = 64 * 1024


class HostPty(Pty):
    """``argv`` in a new session whose controlling terminal is a fresh pty; ``on_start``/``on_end``
    receive its process-group id (the local provider records it, so shutdown kills it)."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: str,
        env: Mapping[str, str],
        cols: int,
        rows: int,
        on_start: Callable[[int], None],
        on_end: Callable[[int], None],
    ) -> None:
        self._token = secrets.token_hex(16)
        self._on_end = on_end
        self._master, slave = os.openpty()
        try:
            _set_size(self._master, cols, rows)
            # through the keeper: a client that dies takes the terminal and all it started with it
            self._process = owner.spawn(
                argv, cwd=cwd, env={**env, PTY_MARKER: self._token}, stdio=(slave, slave, slave), tty=True
            )
        except BaseException:
            os.close(self._master)
            raise
        finally:
            os.close(slave)
        on_start(self._process.pid)
        os.set_blocking(self._master, False)
        self._closed = False

    async def _send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self._master, view) :]
            except BlockingIOError:
                await anyio.wait_writable(self._master)

    async def _receive(self) -> bytes:
        while not self._closed:
            try:
                return os.read(self._master, _CHUNK)
            except BlockingIOError:
                await anyio.wait_readable(self._master)
            except OSError as exc:  # EIO: every process let go of the terminal
                if exc.errno == errno.EIO:
                    return b""
                raise
        return b""

    async def resize(self, cols: int, rows: int) -> None:
        if not self._closed:
            _set_size(self._master, cols, rows)

    async def wait(self) -> int:
        await anyio.to_thread.run_sync(self._process.wait, abandon_on_cancel=True)
        return exit_status(self._process.returncode)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        kill_group(self._process.pid)
        await anyio.to_thread.run_sync(kill_carrying, f"{PTY_MARKER}={self._token}".encode())
        with anyio.CancelScope(shield=True), anyio.move_on_after(KILL_GRACE_S):
            await anyio.to_thread.run_sync(self._process.wait, abandon_on_cancel=True)
        self._on_end(self._process.pid)
        os.close(self._master)


class LocalTerminals:
    """Terminals in a provider's local instances (``Terminals``), from its collaborators:
    ``awake`` gives an instance's record (resumed when paused), ``checked_cwd`` a command's host
    directory checked beneath its workspace, and ``inner_path`` that directory as an isolated
    instance sees it."""

    def __init__(
        self,
        *,
        awake: Callable[[str], Awaitable[Instance]],
        checked_cwd: Callable[[Instance, str | None], Path],
        inner_path: Callable[[Instance, Path], str],
    ) -> None:
        self._awake, self._checked_cwd, self._inner_path = awake, checked_cwd, inner_path

    async def open(
        self,
        instance_id: str,
        command: list[str] | None,
        cols: int,
        rows: int,
        cwd: str | None,
        env: Mapping[str, str],
    ) -> HostPty:
        """``command`` (``None``: bash, else sh, interactive) on a pty of this machine, as the
        instance's commands run (under bubblewrap when it is isolated); its process group is
        recorded in the instance's ``pgids``, so that shutdown kills it."""
        inst = await self._awake(instance_id)
        host_cwd = self._checked_cwd(inst, cwd)
        argv = command or ["/bin/sh", "-c", 'exec "$(command -v bash || echo /bin/sh)" -i']
        if inst.isolate:  # no new session: the pty must stay bubblewrap's controlling terminal
            argv = [*isolated_argv(inst, self._inner_path(inst, host_cwd), new_session=False), *argv]
        full_env = {"TERM": "xterm", **base_env(inst), **env, INSTANCE_MARKER: inst.instance_id}
        pgids = inst.root / "pgids"
        return HostPty(
            argv,
            cwd=str(host_cwd),
            env=full_env,
            cols=cols,
            rows=rows,
            on_start=lambda pid: (pgids / str(pid)).touch(),
            on_end=lambda pid: forget_if_empty(pgids / str(pid)),
        )


def _set_size(fd: int, cols: int, rows: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
