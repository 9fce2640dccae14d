"""The engine's API spoken directly over a local unix socket (no docker-py: importing it costs
~200 ms, which a process claiming a warm instance must not pay), and the transport of an instance's
main channel: its container's main stdin, attached.

Only what the main channel needs: attach to a container's stdin/stdout/stderr (an HTTP upgrade,
then docker's 8-byte-header frames, as an exec's) and inspect one. An engine reached over tcp, TLS
or ssh goes through docker-py (``attach_socket``) instead.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import ssl
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from praisonai._errors import InstanceNotFoundError, ProviderUnavailableError
from praisonai.compute.providers.docker._exec import hang_up, read_frames
from praisonai.runtime.transport import Receiver, Transport

_DEFAULT_SOCKET = "/var/run/docker.sock"
_HEAD_LIMIT = 64 * 1024  # an upgrade answer's headers are a few hundred bytes


def go_line(nonce: str, end_secret: str) -> bytes:
    """Sent once the attach is up: the helper waiting on the main stdin (``watchdog.main_command``)
    takes its nonce from it and says hello over this connection, and hands ``end_secret`` to its
    waiter, which says the helper's end with it. A no-op line (``:``) for a helper that is
    already running."""
    return f": {nonce} {end_secret}\n".encode()


def local_socket(base_url: str | None) -> str | None:
    """The unix socket path of the engine at ``base_url`` (else ``$DOCKER_HOST``, else docker's
    default), or ``None`` for an engine reached otherwise (tcp, ssh, a named pipe)."""
    where = base_url or os.environ.get("DOCKER_HOST") or f"unix://{_DEFAULT_SOCKET}"
    if not where.startswith("unix://"):
        return None
    return where[len("unix://") :] or _DEFAULT_SOCKET


def _connect(path: str, timeout: float) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(path)
    except OSError as exc:
        sock.close()
        raise ProviderUnavailableError(
            f"the Docker engine at unix://{path} does not answer (is dockerd running?): {exc}", op="exec"
        ) from None
    return sock


def _gone(container: str, status: int, what: str) -> Exception:
    if status == 404:
        return InstanceNotFoundError(f"no docker container {container}", op=what)
    if status == 409:  # stopped, or being removed
        return InstanceNotFoundError(f"docker container {container} is no longer running", op=what)
    return ConnectionError(f"the Docker engine answered {status} to {what} on {container}")


def attach_unix(path: str, container: str, timeout: float) -> tuple[socket.socket, bytes]:
    """Attach to ``container``'s stdin, stdout and stderr over the engine's socket at ``path``:
    the upgraded socket, and what arrived after the answer's headers (frames already).

    Raises:
        InstanceNotFoundError: no such container, or it no longer runs.
        ProviderUnavailableError: the engine does not answer.
        ConnectionError: any other refusal.
    """
    sock = _connect(path, timeout)
    target = f"/containers/{quote(container)}/attach?stream=1&stdin=1&stdout=1&stderr=1"
    head = f"POST {target} HTTP/1.1\r\nHost: docker\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n"
    try:
        sock.sendall(f"{head}Content-Length: 0\r\n\r\n".encode())
        answer = b""
        while b"\r\n\r\n" not in answer:
            data = sock.recv(4096)
            if not data or len(answer) > _HEAD_LIMIT:
                raise ConnectionError("the Docker engine closed the attach before answering")
            answer += data
    except BaseException:
        sock.close()
        raise
    headers, _, rest = answer.partition(b"\r\n\r\n")
    status = int(headers.split(b" ", 2)[1]) if headers.startswith(b"HTTP/") else 0
    if status not in (101, 200):  # 200: an engine that answers an upgrade without saying so
        sock.close()
        raise _gone(container, status, "attach")
    sock.settimeout(None)  # idle is normal from here on
    return sock, rest


class _UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("docker", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        self.sock = _connect(self._path, self.timeout or 10.0)


def inspect_unix(path: str, container: str, timeout: float) -> dict[str, Any]:
    """The engine's inspection of ``container`` (``GET /containers/{id}/json``).

    Raises:
        InstanceNotFoundError: no such container.
    """
    connection = _UnixHTTP(path, timeout)
    try:
        connection.request("GET", f"/containers/{quote(container)}/json")
        response = connection.getresponse()
        body = response.read()
    finally:
        connection.close()
    if response.status != 200:
        raise _gone(container, response.status, "lookup")
    found: dict[str, Any] = json.loads(body)
    return found


class AttachTransport(Transport):
    """A container's main stdin/stdout/stderr, attached. Its output does not end with the helper
    (PID 1 holds it): the channel ends it at the line the helper's waiter says, which carries a
    secret of this attach's (``Channel.open``'s ``ended``). ``alive`` asks ``alive_check``."""

    def __init__(self, sock: socket.socket, initial: bytes, alive_check: Callable[[], bool]) -> None:
        self._sock = sock
        self._initial = initial
        self._alive_check = alive_check
        self._closed = False

    def _pump(self, on_stdout: Receiver, on_stderr: Receiver) -> None:
        read_frames(self._sock, on_stdout, on_stderr, self._initial)

    def send(self, data: bytes) -> None:
        self._sock.sendall(data)

    def send_nowait(self, data: bytes) -> int:
        if isinstance(self._sock, ssl.SSLSocket):
            return 0  # TLS takes no send flags
        try:
            return self._sock.send(data, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return 0

    def alive(self) -> bool:
        try:
            return self._alive_check()
        except Exception:  # the engine cannot tell: the container is gone, and the helper with it
            return False

    def exit_code(self) -> int | None:
        return None  # the helper's status is nowhere to be had: it is no exec of the engine's

    def close(self) -> None:
        """Disconnect: the engine then closes the container's stdin (StdinOnce), and the helper,
        at the end of its input, stops its jobs and ends."""
        if not self._closed:
            self._closed = True
            hang_up(self._sock)
