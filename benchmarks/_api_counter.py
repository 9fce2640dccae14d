"""A counting proxy in front of the docker engine's unix socket: every HTTP request a client makes
is forwarded unchanged and counted by method and route (ids and query strings left out), so a
benchmark can say how many engine API calls an operation costs. A connection that upgrades
(exec start, attach) is piped raw from then on: its stream is not requests."""

from __future__ import annotations

import collections
import contextlib
import re
import socket
import threading
from pathlib import Path

ENGINE = "/var/run/docker.sock"
# /v1.43/containers/<id>/start -> /containers/{id}/start: a route, not one container's URL
_VERSION = re.compile(r"^/v[0-9.]+")
_ID = re.compile(r"/(containers|exec|images)/[^/?]+")


def route(method: str, target: str) -> str:
    path = _VERSION.sub("", target.split("?", 1)[0])
    return f"{method} {_ID.sub(lambda m: f'/{m.group(1)}/{{id}}', path)}"


class ApiCounter:
    """``with ApiCounter(folder) as counter:`` serves ``counter.url`` (a ``unix://`` DOCKER_HOST);
    ``counter.take()`` returns the calls counted since the last take, by route."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / "engine.sock"
        self.url = f"unix://{self.path}"
        self._calls: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()
        self._server = socket.socket(socket.AF_UNIX)

    def __enter__(self) -> ApiCounter:
        self._server.bind(str(self.path))
        self._server.listen(64)
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.close()
        self.path.unlink(missing_ok=True)

    def take(self) -> dict[str, int]:
        with self._lock:
            calls, self._calls = dict(self._calls), collections.Counter()
        return calls

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            engine = socket.socket(socket.AF_UNIX)
            engine.connect(ENGINE)
            threading.Thread(target=self._requests, args=(client, engine), daemon=True).start()
            threading.Thread(target=_pipe, args=(engine, client), daemon=True).start()

    def _requests(self, client: socket.socket, engine: socket.socket) -> None:
        """Forward requests one by one (head, then a Content-Length body), counting each."""
        buffer = b""
        while True:
            while b"\r\n\r\n" not in buffer:
                chunk = client.recv(65536)
                if not chunk:
                    return _close(client, engine)
                buffer += chunk
            head, _, buffer = buffer.partition(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, target, _ = lines[0].split(" ", 2)
            headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines[1:])}
            with self._lock:
                self._calls[route(method, target)] += 1
            size = int(headers.get("content-length", "0"))
            while len(buffer) < size:
                chunk = client.recv(65536)
                if not chunk:
                    return _close(client, engine)
                buffer += chunk
            engine.sendall(head + b"\r\n\r\n" + buffer[:size])
            buffer = buffer[size:]
            if "upgrade" in headers.get("connection", "").lower():  # a hijacked stream from here
                if buffer:
                    engine.sendall(buffer)
                return _pipe(client, engine)


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    try:
        while chunk := source.recv(65536):
            sink.sendall(chunk)
        sink.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def _close(*sockets: socket.socket) -> None:
    for sock in sockets:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_WR)
