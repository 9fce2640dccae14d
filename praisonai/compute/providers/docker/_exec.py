"""A long-lived ``docker exec`` as a channel transport: stdin in, demultiplexed stdout/stderr out."""

from __future__ import annotations

import contextlib
import socket
import ssl
from collections.abc import Mapping, Sequence
from typing import Any

from praisonai.runtime.transport import Receiver, Transport

_HEADER = 8  # docker's stream frame: [stream, 0, 0, 0, size (4 bytes, big-endian)]
_STDERR = 2


class DockerExecTransport(Transport):
    """One process started by the engine's exec API, attached through its hijacked socket."""

    def __init__(
        self,
        api: Any,
        container: str,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        workdir: str | None = None,
    ) -> None:
        self._api = api
        self.exec_id = api.exec_create(
            container, list(argv), stdin=True, stdout=True, stderr=True, environment=env, workdir=workdir
        )["Id"]
        stream = api.exec_start(self.exec_id, socket=True)
        self._sock: socket.socket = getattr(stream, "_sock", stream)
        self._sock.settimeout(None)  # idle is normal; docker-py's request timeout must not apply
        self._closed = False

    def _pump(self, on_stdout: Receiver, on_stderr: Receiver) -> None:
        read_frames(self._sock, on_stdout, on_stderr)

    def send(self, data: bytes) -> None:
        self._sock.sendall(data)

    def send_nowait(self, data: bytes) -> int:
        if isinstance(self._sock, ssl.SSLSocket):
            return 0  # a TLS engine's (a pool's tcp host): TLS takes no send flags; send blocks
        try:
            return self._sock.send(data, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return 0

    def alive(self) -> bool:
        return bool(self._inspect().get("Running"))

    def exit_code(self) -> int | None:
        state = self._inspect()
        return None if state.get("Running") else state.get("ExitCode")

    def _inspect(self) -> dict[str, Any]:
        try:
            return dict(self._api.exec_inspect(self.exec_id))
        except Exception:  # the container is gone: so is the process
            return {"Running": False}

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            hang_up(self._sock)


def hang_up(sock: socket.socket) -> None:
    """Shut an attached stream down both ways (the reader's ``recv`` ends), then close it."""
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()


def read_frames(sock: socket.socket, on_stdout: Receiver, on_stderr: Receiver, initial: bytes = b"") -> None:
    """Hand each frame of an attached, non-TTY stream to its receiver, until the stream ends;
    ``initial``: the stream's first bytes, already read (with the attach's answer)."""
    buffer = bytearray()
    data = initial
    while True:
        if not data:
            try:
                data = sock.recv(1 << 18)
            except OSError:
                data = b""
            if not data:
                return
        buffer += data
        data = b""
        start = 0
        while len(buffer) - start >= _HEADER:
            size = int.from_bytes(buffer[start + 4 : start + _HEADER], "big")
            end = start + _HEADER + size
            if len(buffer) < end:
                break
            receive = on_stderr if buffer[start] == _STDERR else on_stdout
            receive(bytes(buffer[start + _HEADER : end]))
            start = end
        del buffer[:start]
