"""The fake's edge: E2B's public preview hosts, ``https://{port}-{sandbox_id}.{domain}``.

E2B serves a port of a sandbox at the host ``sandbox.get_host(port)`` over https through its edge
proxy. This edge listens with TLS on 127.0.0.1 (a certificate for ``*.{domain}`` from a throwaway
CA, ``_tls``), reads the request's head, routes by its ``Host`` and relays the connection, the
head included, to that port inside the sandbox's docker container through ``docker exec`` (a
small relay program connects to ``localhost:PORT`` there, as envd's port forwarder makes a
service bound to the sandbox's loopback reachable). Its answers when it cannot:

- a sandbox that is not running (unknown, killed, expired; paused too, as auto-resume on traffic
  is not modelled): 502 ``{"message": "The sandbox was not found", "sandboxId": …, "code": 502}``
  (the SDK keys on "was not found"; the fields beside ``message`` are assumed);
- nothing listening on the port: 502 ``{"message": "The sandbox is running but port is not open",
  "sandboxId": …, "port": …}`` (the JSON a non-browser client gets; E2B's SDK tests check these
  three fields);
- a Host not of that shape: 400 (assumed).

No authentication: the fake's sandboxes are public, E2B's default (``allow_public_traffic``
false, which asks for the ``e2b-traffic-access-token`` header, is not modelled). A client reaches
the edge through :meth:`Edge.resolved`: names under ``domain`` resolve to it at the wire.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import socket
import socketserver
import ssl
import subprocess
import threading
from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock

from fakes.e2b._tls import Certs

DOMAIN = "e2b-fake.test"  # a reserved name (RFC 2606): nothing outside the tests resolves it
_HEAD_LIMIT = 64 * 1024
_CHUNK = 64 * 1024
NOT_FOUND = "The sandbox was not found"
PORT_NOT_OPEN = "The sandbox is running but port is not open"

# Runs in the sandbox's container: "+" once connected (else exit 1, nothing written), then bytes
# both ways until either side ends.
_RELAY = """\
import os, select, socket, sys
try:
    s = socket.create_connection(("localhost", int(sys.argv[1])))
except OSError:
    sys.exit(1)
os.write(1, b"+")
while True:
    for r in select.select([0, s], [], [])[0]:
        data = os.read(0, 65536) if r == 0 else s.recv(65536)
        if not data:
            os._exit(0)
        if r == 0:
            s.sendall(data)
        else:
            while data:
                data = data[os.write(1, data):]
"""


class Edge:
    """The edge, started by the fake; ``container_of(sandbox_id)`` is the running sandbox's
    container, or ``None``."""

    def __init__(self, container_of: Callable[[str], str | None], domain: str = DOMAIN) -> None:
        self.domain = domain
        self._container_of = container_of
        self._host = re.compile(rf"^(\d+)-([a-z0-9]+)\.{re.escape(domain)}$")
        self._certs = Certs(domain)
        self._relays: set[subprocess.Popen[bytes]] = set()
        self._lock = threading.Lock()
        edge = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                edge._serve(self.request)

        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        with self._lock:
            relays = list(self._relays)
        for relay in relays:
            _end(relay)
        self._certs.close()

    @contextlib.contextmanager
    def resolved(self) -> Iterator[None]:
        """Within the block, in this process: names under the domain resolve to this edge (port
        443 becomes the edge's port, at ``getaddrinfo``), and clients that load the default CA
        paths (``urllib``) trust the edge's CA (``SSL_CERT_FILE``)."""
        real = socket.getaddrinfo

        def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
            name = host.decode() if isinstance(host, bytes) else host
            if isinstance(name, str) and name.lower().rstrip(".").endswith(f".{self.domain}"):
                return real("127.0.0.1", self.port, *args, **kwargs)
            return real(host, port, *args, **kwargs)

        saved = os.environ.get("SSL_CERT_FILE")
        os.environ["SSL_CERT_FILE"] = str(self._certs.ca_file)
        try:
            with mock.patch.object(socket, "getaddrinfo", getaddrinfo):
                yield
        finally:
            if saved is None:
                os.environ.pop("SSL_CERT_FILE", None)
            else:
                os.environ["SSL_CERT_FILE"] = saved

    def client_context(self) -> ssl.SSLContext:
        return self._certs.client()

    # ---- one connection -----------------------------------------------------------------------

    def _serve(self, raw: socket.socket) -> None:
        try:
            conn = self._certs.server.wrap_socket(raw, server_side=True)
        except (ssl.SSLError, OSError):
            return
        with conn, contextlib.suppress(OSError):
            head = _read_head(conn)
            if head is not None:
                self._route(conn, head)

    def _route(self, conn: ssl.SSLSocket, head: bytes) -> None:
        found = self._host.match(_host_of(head))
        if found is None:
            conn.sendall(_answer("400 Bad Request", {"code": 400, "message": "invalid host"}))
            return
        port, sandbox_id = int(found.group(1)), found.group(2)
        container = self._container_of(sandbox_id)
        if container is None or not 1 <= port <= 65535:
            payload = {"message": NOT_FOUND, "sandboxId": sandbox_id, "code": 502}
            conn.sendall(_answer("502 Bad Gateway", payload))
            return
        argv = ["docker", "exec", "-i", container, "python3", "-I", "-S", "-c", _RELAY, str(port)]
        relay = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        with self._lock:
            self._relays.add(relay)
        try:
            assert relay.stdout is not None and relay.stdin is not None
            if os.read(relay.stdout.fileno(), 1) != b"+":
                payload = {"message": PORT_NOT_OPEN, "sandboxId": sandbox_id, "port": port}
                conn.sendall(_answer("502 Bad Gateway", payload))
                return
            _write(relay.stdin.fileno(), head)
            _pump(conn, relay)
        finally:
            with self._lock:
                self._relays.discard(relay)
            _end(relay)


def _read_head(conn: ssl.SSLSocket) -> bytes | None:
    """The bytes up to and including the end of the request's head (and whatever came with it)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(_CHUNK)
        if not chunk or len(data) > _HEAD_LIMIT:
            return None
        data += chunk
    return data


def _host_of(head: bytes) -> str:
    for line in head.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "host":
            return value.strip().lower().rsplit(":", 1)[0] if "]" not in value else ""
    return ""


def _answer(status: str, payload: dict[str, Any]) -> bytes:
    body = json.dumps(payload).encode()
    head = f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    return head.encode() + b"Connection: close\r\n\r\n" + body


def _pump(conn: ssl.SSLSocket, relay: subprocess.Popen[bytes]) -> None:
    """Bytes both ways between the client and the relay until either ends."""
    assert relay.stdout is not None and relay.stdin is not None
    out, into = relay.stdout.fileno(), relay.stdin.fileno()
    poller = select.poll()  # not select(): a test process may hold descriptors past 1023
    poller.register(conn.fileno(), select.POLLIN)
    poller.register(out, select.POLLIN)
    while True:
        ready = {conn.fileno()} if conn.pending() else {fd for fd, _ in poller.poll()}
        if conn.fileno() in ready:
            data = conn.recv(_CHUNK)
            if not data:
                return
            _write(into, data)
        if out in ready:
            data = os.read(out, _CHUNK)
            if not data:
                return
            conn.sendall(data)


def _write(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data) :]


def _end(relay: subprocess.Popen[bytes]) -> None:
    """Close the relay's stdin (its program in the container ends on that EOF), then reap it."""
    with contextlib.suppress(OSError):
        if relay.stdin is not None:
            relay.stdin.close()
    try:
        relay.wait(timeout=5)
    except subprocess.TimeoutExpired:
        relay.kill()
        relay.wait()
    if relay.stdout is not None:
        relay.stdout.close()
