"""A process of a local instance on a pseudo-terminal of this machine (``Capability.PTY``)."""

from __future__ import annotations

import errno
import fcntl
import os
import secrets
import struct
import termios
from collections.abc import Callable, Mapping, Sequence

import anyio

from praisonai._limits import KILL_GRACE_S
from praisonai.compute.abilities.pty import PTY_MARKER, Pty
from praisonai.compute.providers.local._process import exit_status, kill_carrying, kill_group
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


def _set_size(fd: int, cols: int, rows: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
