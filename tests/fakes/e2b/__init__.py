"""A loopback fake of E2B at its wire, for the real ``e2b`` SDK to talk to.

What it models (the e2b 2.63 wheel, read from its source):

- the REST control plane the SDK calls: ``POST /sandboxes`` (template, timeout as an absolute
  ``end_at``, metadata, envVars, network fields kept as sent, the ``Idempotency-Key`` header: a
  repeated key returns the same sandbox; ``/v2/sandboxes`` as the SDK sends it),
  ``GET /sandboxes/{id}``, ``DELETE /sandboxes/{id}``
  (404 when gone: the SDK's ``kill`` then returns False), ``POST /sandboxes/{id}/timeout``
  (``end_at = now + timeout``), ``POST /v2/sandboxes/{id}/connect``, ``GET /v2/sandboxes`` (exact
  metadata match, AND; the ``state`` filter, running and paused by default). A running sandbox
  past its ``end_at`` is killed by the fake's clock, as E2B kills it (paused instead when created
  with ``autoPause``: lifecycle ``on_timeout: pause``), and answers 404 from then on;
- pause: ``POST /sandboxes/{id}/pause`` freezes the container (``docker pause``: memory and files
  kept, as E2B's full pause keeps them; 409 when already paused), a paused sandbox lists and reads
  as ``paused``, is never expired by the clock, refuses envd and ``timeout``/``snapshots``
  (409, assumed), and ``connect`` resumes it (``docker unpause``, ``end_at = now + timeout``);
- envd's ``process.Process`` Connect service (start, connect, list, send_input, close_stdin,
  send_signal = SIGKILL of the process group, update = a terminal's resize) through the wheel's
  generated server stub, and envd's ``GET/POST /files`` (raw bytes; multipart or octet-stream
  uploads, parents created);
- envd's ``filesystem.Filesystem`` Connect service: Stat, ListDir, MakeDir, Move, Remove, done
  inside the container as envd's Go does them, links and error codes included (``_fs``);
- a process as a long-lived stream, as the provider's helper channel uses it: ``start`` with
  ``stdin=True`` and no deadline streams output events (raw bytes, which the SDK decodes) until
  the process has exited and its pipes are closed, with a keepalive event each second of silence
  (envd's interval is the client's ``Keepalive-Ping-Interval``, 50 s); each ``send_input`` is
  written whole, in arrival order, to the process's stdin; ``send_input`` to a process started
  without stdin or after ``close_stdin`` fails (FAILED_PRECONDITION, assumed: the SDK makes any
  code a ``SandboxException``); ``close_stdin`` is EOF;
  ``calls`` counts every request (the vendor calls an operation costs);
- a Start with a ``pty`` (the SDK's ``sandbox.pty``): the command on a real pseudo-terminal in the
  container of the size asked for, its output as ``DataEvent.pty``, ``send_input`` as ``pty``
  typed into it, ``update`` resizing it (``_pty``);
- every sandbox is a real local docker container (``praisonai-sandbox:latest``, labelled
  ``praisonai.test.e2b-fake``), commands run as ``/bin/bash -l -c`` there, so exit codes,
  stdout/stderr, stdin, timeouts and file bytes are real. The SDK's own behaviour on top is then
  real too: ``CommandExitException`` on a non-zero exit, ``TimeoutException`` at the command
  timeout while the process keeps running until ``commands.kill(pid)``.

- E2B's edge, the public preview hosts ``https://{port}-{sandbox_id}.{domain}`` that
  ``sandbox.get_host(port)`` names (``domain`` in the create and connect answers): TLS from a
  throwaway CA, routed by ``Host`` to that port inside the sandbox's container, 502 with E2B's
  JSON when the sandbox is not running or nothing listens (``_edge``; clients reach it through
  ``fake.edge.resolved()``).

Snapshots: ``POST /sandboxes/{id}/snapshots`` commits the container to an image (filesystem only:
envd's env from ``envVars`` is given to each process, not stored in the container), ``GET
/snapshots?name=`` lists them, a create whose ``templateID`` is a snapshot's id or name starts
from it, and ``DELETE /templates/{id}`` (``delete_snapshot``) removes one (204; 404 unknown).
What it does not model: authentication beyond "a key is present" (``REFUSED_KEY`` gets 401),
templates, memory snapshots, ``mode="filesystem"`` pauses, the filesystem service's watch calls,
``stream_input``, users (commands run as root), a template's own shell startup files (bash's are
the image's), egress rules (stored, not enforced), rate limits, ``allow_public_traffic: false``
and its traffic access token, auto-resume of a paused sandbox on traffic to its preview host.
The SDK must be pointed at it with ``E2B_API_URL``, ``E2B_SANDBOX_URL`` (every sandbox behind one
URL, told apart by the ``E2b-Sandbox-Id`` header, as the SDK sends it) and HTTP/1.1
(``E2B_HTTP_VERSION=1.1``): :meth:`E2BFake.env` gives those.
"""

from __future__ import annotations

import dataclasses
import io
import json
import secrets
import socketserver
import threading
import time
import uuid
from datetime import datetime, timezone
from typing import Any
from urllib.parse import parse_qs
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from e2b.envd.filesystem.filesystem_connect import FilesystemWSGIApplication
from e2b.envd.process.process_connect import ProcessWSGIApplication

from fakes import docker
from fakes.e2b import _sandboxes
from fakes.e2b._edge import Edge
from fakes.e2b._envd import ProcessService, files
from fakes.e2b._fs import FilesystemService
from fakes.e2b._pty import PtyProc
from fakes.e2b._sandboxes import Proc

ENVD_VERSION = "0.6.4"
REFUSED_KEY = "e2b_refused"  # the one API key the fake answers 401 to
__all__ = ["ENVD_VERSION", "REFUSED_KEY", "E2BFake", "FakeSandbox"]


@dataclasses.dataclass
class FakeSandbox:
    sandbox_id: str
    container: str
    template: str
    metadata: dict[str, str]
    started_at: float
    end_at: float
    request: dict[str, Any]  # the create body as sent (network, lifecycle… for tests to read)
    envs: dict[str, str] = dataclasses.field(default_factory=dict)  # envd's, given to processes
    procs: dict[int, Proc | PtyProc] = dataclasses.field(default_factory=dict)
    paused: bool = False

    def touch(self) -> None:
        """Nothing: on E2B activity does not move ``end_at`` (only ``set_timeout`` does)."""


class E2BFake:
    """The fake, started with ``with E2BFake() as fake:``; ``fake.env()`` points the SDK at it."""

    def __init__(self) -> None:
        self.sandboxes: dict[str, FakeSandbox] = {}
        self.idempotency: dict[str, str] = {}
        self.snapshots: dict[str, list[str]] = {}  # snapshot id -> its names (image: _image(id))
        #: deleted snapshots' images a container still used: removed when the fake stops
        self.deleted_images: list[str] = []
        self.snapshot_requests: list[dict[str, Any]] = []  # the bodies, as sent (``memory``)
        self.calls: list[str] = []  # "METHOD path" of every request, for call counts
        self.owner = uuid.uuid4().hex[:12]
        self._lock = threading.Lock()
        self._server: WSGIServer | None = None
        self._envd = ProcessWSGIApplication(ProcessService(self))  # type: ignore[arg-type]
        self._envd_fs = FilesystemWSGIApplication(FilesystemService(self))  # type: ignore[arg-type]
        self._stop = threading.Event()
        self.edge: Edge | None = None  # E2B's preview hosts (``_edge``), while the fake runs
        #: set: the next uploads are cut after this many bytes, written in place as envd does
        self.cut_uploads_at: int | None = None

    # ---- life of the fake -------------------------------------------------------------------

    def __enter__(self) -> E2BFake:
        self._server = make_server("127.0.0.1", 0, self._app, server_class=_Server, handler_class=_Quiet)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        threading.Thread(target=self._clock, daemon=True).start()
        self.edge = Edge(lambda sandbox_id: getattr(self.running(sandbox_id), "container", None))
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self.edge is not None:
            self.edge.close()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        for sandbox in list(self.sandboxes.values()):
            docker.remove(sandbox.container)
        self.sandboxes.clear()
        docker.remove_image(*(self._image(i) for i in self.snapshots), *self.deleted_images)
        self.snapshots.clear()

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_port}"

    def env(self) -> dict[str, str]:
        """The environment that points the real SDK at this fake."""
        return {
            "E2B_API_URL": self.url,
            "E2B_SANDBOX_URL": self.url,
            "E2B_API_KEY": "e2b_fake",
            "E2B_HTTP_VERSION": "1.1",
        }

    def known(self, sandbox_id: str) -> FakeSandbox | None:
        """The sandbox, running or paused; ``None`` once killed or expired."""
        sandbox = self.sandboxes.get(sandbox_id)
        return sandbox if sandbox is not None and sandbox.paused else self.running(sandbox_id)

    def running(self, sandbox_id: str) -> FakeSandbox | None:
        sandbox = self.sandboxes.get(sandbox_id)
        if sandbox is not None and sandbox.paused:
            return None
        if sandbox is not None and sandbox.end_at <= time.time():
            if sandbox.request.get("autoPause"):  # lifecycle on_timeout "pause": kept, frozen
                self._pause_or_resume(sandbox, "pause", {})
            else:
                self._expire(sandbox)
            return None
        return sandbox

    def _expire(self, sandbox: FakeSandbox) -> None:
        with self._lock:
            if self.sandboxes.pop(sandbox.sandbox_id, None) is None:
                return
        docker.remove(sandbox.container)

    def _clock(self) -> None:
        while not self._stop.wait(0.2):
            for sandbox in list(self.sandboxes.values()):
                self.running(sandbox.sandbox_id)

    # ---- HTTP -------------------------------------------------------------------------------

    def _app(self, environ: dict[str, Any], start_response: Any) -> Any:
        method, path = environ["REQUEST_METHOD"], environ.get("PATH_INFO", "")
        self.calls.append(f"{method} {path}")
        # The whole body, read here: wsgiref neither de-chunks nor stops a reader at the end of a
        # body (connectrpc drains its input to EOF, which on a kept-alive socket never comes).
        if "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower():
            body = _dechunk(environ["wsgi.input"])
        else:
            body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        environ["wsgi.input"], environ["CONTENT_LENGTH"] = io.BytesIO(body), str(len(body))
        if path.startswith("/process.Process/"):
            return self._envd(environ, start_response)
        if path.startswith("/filesystem.Filesystem/"):
            return self._envd_fs(environ, start_response)
        if path == "/files":
            status, body, kind = files(self, environ)
            start_response(status, [("Content-Type", kind), ("Content-Length", str(len(body)))])
            return [body]
        if path == "/health":
            start_response("204 No Content", [])
            return [b""]
        status, payload = self._rest(method, path, environ)
        body = b"" if payload is None else json.dumps(payload).encode()
        start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]

    def _rest(self, method: str, path: str, environ: dict[str, Any]) -> tuple[str, Any]:
        if environ.get("HTTP_X_API_KEY", "") in ("", REFUSED_KEY):
            return "401 Unauthorized", {"code": 401, "message": "Invalid API key"}
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = json.loads(environ["wsgi.input"].read(length) or b"{}") if length else {}
        parts = path.strip("/").split("/")
        if method == "POST" and parts in (["sandboxes"], ["v2", "sandboxes"]):
            return self._create(body, environ.get("HTTP_IDEMPOTENCY_KEY"))
        if method == "GET" and parts == ["snapshots"]:
            name = parse_qs(environ.get("QUERY_STRING", "")).get("name", [""])[0]
            return "200 OK", [
                {"snapshotID": i, "names": names}
                for i, names in self.snapshots.items()
                if not name or name == i or name in names
            ]
        if method == "DELETE" and parts[:1] == ["templates"] and len(parts) == 2:
            return self._delete_snapshot(parts[1])
        if method == "GET" and parts == ["v2", "sandboxes"]:
            return "200 OK", self._list(parse_qs(environ.get("QUERY_STRING", "")))
        if parts[:1] == ["v2"]:
            parts = parts[1:]  # v2 connect has the shape of v1
        if len(parts) < 2 or parts[0] != "sandboxes":
            return "404 Not Found", {"code": 404, "message": f"no route {method} {path}"}
        sandbox = self.known(parts[1])
        if sandbox is None:
            return "404 Not Found", {"code": 404, "message": f"sandbox {parts[1]} not found"}
        if method == "POST" and parts[2:] in (["pause"], ["connect"]):
            return self._pause_or_resume(sandbox, parts[2], body)
        if sandbox.paused and len(parts) > 2:
            return "409 Conflict", {"code": 409, "message": f"sandbox {parts[1]} is paused"}
        if method == "GET" and len(parts) == 2:
            return "200 OK", self._detail(sandbox)
        if method == "DELETE" and len(parts) == 2:
            self._expire(sandbox)
            return "204 No Content", None
        if method == "POST" and parts[2:] == ["timeout"]:
            sandbox.end_at = time.time() + float(body.get("timeout", 0))
            return "204 No Content", None
        if method == "POST" and parts[2:] == ["snapshots"]:
            self.snapshot_requests.append(body)
            return self._snapshot(sandbox, body.get("name"))
        return "404 Not Found", {"code": 404, "message": f"no route {method} {path}"}

    def _create(self, body: dict[str, Any], key: str | None) -> tuple[str, Any]:
        with self._lock:
            if key and key in self.idempotency and self.idempotency[key] in self.sandboxes:
                return "201 Created", self._short(self.sandboxes[self.idempotency[key]])
            sandbox_id = "i" + secrets.token_hex(10)
            if key:
                self.idempotency[key] = sandbox_id
        template = str(body.get("templateID", "base"))
        snapshot = next(
            (i for i, names in self.snapshots.items() if template == i or template in names), None
        )
        image = docker.IMAGE if snapshot is None else self._image(snapshot)
        container = _sandboxes.start_container(sandbox_id, self.owner, image)
        now = time.time()
        end_at = now + float(body.get("timeout", 300))
        metadata = dict(body.get("metadata") or {})
        sandbox = FakeSandbox(sandbox_id, container, template, metadata, now, end_at, body)
        sandbox.envs = dict(body.get("envVars") or {})
        self.sandboxes[sandbox_id] = sandbox
        return "201 Created", self._short(sandbox)

    def _pause_or_resume(self, sandbox: FakeSandbox, op: str, body: dict[str, Any]) -> tuple[str, Any]:
        """``pause`` freezes a running sandbox (409 when paused); ``connect`` resumes a paused one
        for ``timeout`` seconds, or extends a running one's ``end_at`` (never shortens it)."""
        with self._lock:
            was_paused = sandbox.paused
            if op == "pause" and not was_paused:
                _sandboxes.freeze(sandbox.container, frozen=True)
                sandbox.paused = True
            elif op == "connect" and was_paused:
                _sandboxes.freeze(sandbox.container, frozen=False)
                sandbox.paused, sandbox.end_at = False, time.time()
        if op == "pause":
            return (
                ("409 Conflict", {"code": 409, "message": "already paused"})
                if was_paused
                else (
                    "204 No Content",
                    None,
                )
            )
        sandbox.end_at = max(sandbox.end_at, time.time() + float(body.get("timeout", 300)))
        return ("201 Created" if was_paused else "200 OK"), self._short(sandbox)

    def _snapshot(self, sandbox: FakeSandbox, name: str | None) -> tuple[str, Any]:
        """A filesystem snapshot (a committed image; envd's env is not in it). A name already
        taken moves to the new snapshot, as E2B assigns a new build to the existing template."""
        snapshot_id = "snap" + secrets.token_hex(8)
        _sandboxes.commit_container(sandbox.container, self._image(snapshot_id), self.owner)
        names = [name] if name else []
        for other in self.snapshots.values():
            if name in other:
                other.remove(name)
        self.snapshots[snapshot_id] = names
        return "201 Created", {"snapshotID": snapshot_id, "names": names}

    def _delete_snapshot(self, template_id: str) -> tuple[str, Any]:
        """``delete_snapshot``: ``DELETE /templates/{id}`` of a snapshot; 404 when unknown. Its
        image goes once no sandbox's container uses it (or when the fake stops)."""
        with self._lock:
            if self.snapshots.pop(template_id, None) is None:
                return "404 Not Found", {"code": 404, "message": f"template {template_id} not found"}
        if docker.docker("rmi", self._image(template_id)).returncode != 0:
            self.deleted_images.append(self._image(template_id))
        return "204 No Content", None

    def _image(self, snapshot_id: str) -> str:
        return f"praisonai-e2bfake-{self.owner}:{snapshot_id}"

    def _list(self, query: dict[str, list[str]]) -> list[dict[str, Any]]:
        wanted = {k: v[0] for k, v in parse_qs(query.get("metadata", [""])[0]).items()}
        states = ",".join(query.get("state") or ["running,paused"]).split(",")
        found = []
        for sandbox in list(self.sandboxes.values()):
            if self.known(sandbox.sandbox_id) is None:
                continue
            if ("paused" if sandbox.paused else "running") not in states:
                continue
            if all(sandbox.metadata.get(k) == v for k, v in wanted.items()):
                found.append(self._detail(sandbox))
        return found

    def _short(self, sandbox: FakeSandbox) -> dict[str, Any]:
        return {
            "templateID": sandbox.template,
            "sandboxID": sandbox.sandbox_id,
            "clientID": "fake",
            "envdVersion": ENVD_VERSION,
            "domain": self.edge.domain if self.edge is not None else None,  # get_host's domain
        }

    def _detail(self, sandbox: FakeSandbox) -> dict[str, Any]:
        return {
            **self._short(sandbox),
            "startedAt": _iso(sandbox.started_at),
            "endAt": _iso(sandbox.end_at),
            "cpuCount": 2,
            "memoryMB": 512,
            "diskSizeMB": 1024,
            "state": "paused" if sandbox.paused else "running",
            "metadata": dict(sandbox.metadata),
        }


def _dechunk(stream: Any) -> bytes:
    body = bytearray()
    while True:
        size = int(stream.readline().split(b";")[0].strip() or b"0", 16)
        if size == 0:
            while stream.readline().strip():  # trailers
                pass
            return bytes(body)
        body += stream.read(size)
        stream.readline()


def _iso(at: float) -> str:
    return datetime.fromtimestamp(at, timezone.utc).isoformat().replace("+00:00", "Z")


class _Server(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True
    request_queue_size = 1024  # the SDK opens many connections at once (HTTP/1.1: one per call)


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass
