"""The fake's HTTP side: routing, the beta-header and key checks, injected faults, and the SSE
stream writer (chunked ``text/event-stream``; a dropped stream ends without its final chunk, as a
cut connection does).
"""

from __future__ import annotations

import contextlib
import json
import queue
import re
import select
import socket
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final, Protocol
from urllib.parse import urlsplit

from fakes.managed_agents._live import Stream
from fakes.managed_agents._wire import BETA, ApiError, Json, Query

_ID: Final = r"(?P<id>[^/]+)"
#: (method, path pattern, route name): the route names are the SDK's method names.
ROUTES: Final = [
    ("POST", "/v1/agents", "agents.create"),
    ("GET", "/v1/agents", "agents.list"),
    ("GET", f"/v1/agents/{_ID}", "agents.retrieve"),
    ("POST", f"/v1/agents/{_ID}", "agents.update"),
    ("POST", f"/v1/agents/{_ID}/archive", "agents.archive"),
    ("GET", f"/v1/agents/{_ID}/versions", "agents.versions.list"),
    ("POST", "/v1/environments", "environments.create"),
    ("GET", "/v1/environments", "environments.list"),
    ("GET", f"/v1/environments/{_ID}", "environments.retrieve"),
    ("POST", f"/v1/environments/{_ID}", "environments.update"),
    ("DELETE", f"/v1/environments/{_ID}", "environments.delete"),
    ("POST", f"/v1/environments/{_ID}/archive", "environments.archive"),
    ("POST", "/v1/sessions", "sessions.create"),
    ("GET", "/v1/sessions", "sessions.list"),
    ("GET", f"/v1/sessions/{_ID}", "sessions.retrieve"),
    ("POST", f"/v1/sessions/{_ID}", "sessions.update"),
    ("DELETE", f"/v1/sessions/{_ID}", "sessions.delete"),
    ("POST", f"/v1/sessions/{_ID}/archive", "sessions.archive"),
    ("POST", f"/v1/sessions/{_ID}/events", "events.send"),
    ("GET", f"/v1/sessions/{_ID}/events", "events.list"),
    ("GET", f"/v1/sessions/{_ID}/events/stream", "events.stream"),
]
_COMPILED: Final = [(m, re.compile(p), name) for m, p, name in ROUTES]


@dataclass(frozen=True)
class Request:
    """One request as the fake received it (``route`` is None for a path it does not serve)."""

    method: str
    path: str
    query: str
    route: str | None
    headers: dict[str, str]  # lower-cased names
    body: Json | None


@dataclass
class Fault:
    """An error answer to come: ``status`` for the next ``times`` requests to ``route`` (``"*"``:
    any), given before the request takes effect or, with ``after``, once it has."""

    status: int
    route: str
    after: bool
    times: int
    retry_after: str | None
    message: str


def match(method: str, path: str) -> tuple[str | None, str]:
    """The route serving ``method path`` and the id in it."""
    for want, pattern, name in _COMPILED:
        found = pattern.fullmatch(path)
        if want == method and found:
            return name, found.groupdict().get("id") or ""
    return None, ""


class Backend(Protocol):
    """What the handler needs from the fake (``ManagedAgentsFake`` implements it)."""

    @property
    def require_key(self) -> str | None: ...
    @property
    def closing(self) -> threading.Event: ...

    def record(self, request: Request) -> str: ...  # returns a request id
    def take_fault(self, route: str) -> Fault | None: ...
    def dispatch(self, route: str, ident: str, query: Query, body: Json) -> Json: ...
    def open_stream(self, ident: str, query: Query) -> tuple[Stream, Callable[[], None]]: ...


class Server(ThreadingHTTPServer):
    """Joins its handler threads on close; :meth:`cut_all` unblocks those waiting on idle
    keep-alive connections, so closing never waits on a client."""

    daemon_threads = False
    block_on_close = True

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(("127.0.0.1", 0), handler)
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            self._open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def cut_all(self) -> None:
        with self._open_lock:
            for sock in self._open:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], (ConnectionError, OSError)):
            super().handle_error(request, client_address)


def handler(backend: Backend) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self._serve("GET")

        def do_POST(self) -> None:
            self._serve("POST")

        def do_DELETE(self) -> None:
            self._serve("DELETE")

        def _serve(self, method: str) -> None:
            url = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = json.loads(raw) if raw else None
            route, ident = match(method, url.path)
            headers = {k.lower(): v for k, v in self.headers.items()}
            self.request_id = backend.record(Request(method, url.path, url.query, route, headers, body))
            try:
                self._check(route, headers)
                assert route is not None
                fault = backend.take_fault(route)
                if fault is not None and not fault.after:
                    return self._fault(fault)
                if route == "events.stream":
                    return self._stream(*backend.open_stream(ident, Query(url.query)))
                payload = backend.dispatch(
                    route, ident, Query(url.query), body if isinstance(body, dict) else {}
                )
            except ApiError as exc:
                return self._send(exc.status, exc.body(self.request_id), exc.headers)
            if fault is not None:
                return self._fault(fault)
            self._send(200, payload)

        def _check(self, route: str | None, headers: dict[str, str]) -> None:
            if route is None:
                raise ApiError(404, f"no route {self.command} {urlsplit(self.path).path}")
            key = headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")
            if backend.require_key is not None and key != backend.require_key:
                raise ApiError(401, "invalid x-api-key")
            if BETA not in [b.strip() for b in headers.get("anthropic-beta", "").split(",")]:
                raise ApiError(400, f"this endpoint requires the beta header 'anthropic-beta: {BETA}'")

        def _fault(self, fault: Fault) -> None:
            headers = {"retry-after": fault.retry_after} if fault.retry_after is not None else {}
            self._send(fault.status, ApiError(fault.status, fault.message).body(self.request_id), headers)

        def _stream(self, stream: Stream, done: Callable[[], None]) -> None:
            """Write the stream's frames until it ends, its client leaves, its drop fault fires or
            the fake closes."""
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("request-id", self.request_id)
            self.end_headers()
            written = 0
            try:
                while stream.drop_after is None or written < stream.drop_after:
                    frame = _next(stream, self.connection, backend.closing)
                    if frame is None:
                        self.wfile.write(b"0\r\n\r\n")
                        return
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
                    self.wfile.flush()
                    written += 1
                if stream.stall != "drop":
                    self._stall(stream.stall == "pings")
                self.close_connection = True  # dropped: no final chunk, the connection just ends
            except OSError:
                self.close_connection = True
            finally:
                done()

        def _stall(self, pings: bool) -> None:
            """Keep the stream open and quiet (a ping comment every 50 ms with ``pings``) until its
            client leaves or the fake closes."""
            ping = b": ping\n\n"
            while not backend.closing.wait(0.05) and not _gone(self.connection):
                if pings:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(ping), ping))
                    self.wfile.flush()

        def _send(self, status: int, payload: Json, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("request-id", self.request_id)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


def _next(stream: Stream, connection: socket.socket, closing: threading.Event) -> bytes | None:
    """The stream's next frame; None when it ended, its client left or the fake is closing."""
    while not closing.is_set():
        try:
            return stream.frames.get(timeout=0.05)
        except queue.Empty:  # a quiet moment, see whether the client is still there
            if _gone(connection):
                return None
    return None


def _gone(connection: socket.socket) -> bool:
    """The client closed its end of ``connection``."""
    poller = select.poll()  # not select(): descriptors past 1023 in a long test run
    poller.register(connection, select.POLLIN)
    try:
        return bool(poller.poll(0)) and connection.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True
