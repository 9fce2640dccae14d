"""The client's ends of a kept command's pipes as anyio byte streams (``runtime.owner.spawn`` hands
over descriptors, not an anyio process)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import struct
import termios

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

_CHUNK = 1 << 16


class PipeReceiveStream(ByteReceiveStream):
    """The read end of a pipe; end-of-file is :class:`anyio.EndOfStream`."""

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self._fd = fd

    async def receive(self, max_bytes: int = _CHUNK) -> bytes:
        while True:
            if self._fd < 0:
                raise anyio.ClosedResourceError
            try:
                data = os.read(self._fd, max_bytes)
            except BlockingIOError:
                await anyio.wait_readable(self._fd)
                continue
            if not data:
                raise anyio.EndOfStream
            return data

    def pending(self) -> int:
        """How many bytes the pipe holds now, unread (0 once closed)."""
        if self._fd < 0:
            return 0
        held = fcntl.ioctl(self._fd, termios.FIONREAD, b"\0" * 4)
        return int(struct.unpack("i", held)[0])

    async def aclose(self) -> None:
        _close(self._fd)
        self._fd = -1


class PipeSendStream(ByteSendStream):
    """The write end of a pipe; a reader that went away is :class:`anyio.BrokenResourceError`."""

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self._fd = fd

    async def send(self, item: bytes) -> None:
        view = memoryview(item)
        while view:
            if self._fd < 0:
                raise anyio.ClosedResourceError
            try:
                view = view[os.write(self._fd, view) :]
            except BlockingIOError:
                await anyio.wait_writable(self._fd)
            except BrokenPipeError as exc:
                raise anyio.BrokenResourceError from exc

    async def aclose(self) -> None:
        _close(self._fd)
        self._fd = -1


def _close(fd: int) -> None:
    if fd >= 0:
        anyio.notify_closing(fd)
        with contextlib.suppress(OSError):
            os.close(fd)
