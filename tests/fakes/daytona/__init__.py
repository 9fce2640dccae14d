"""A loopback fake of Daytona's REST API and toolbox API, for the real ``daytona`` SDK to talk to.

Start it (``with DaytonaFake() as fake:``) and point the SDK at ``fake.api_url`` (``DAYTONA_API_URL``
or ``DaytonaConfig(api_url=...)``, any api key). The SDK's own code runs unchanged: its request
serialisation, its multipart parsers, its error mapping. Each sandbox is a real local docker
container of ``praisonai-sandbox:latest`` (label ``praisonai.test.daytona-fake=<fake id>``; ``close``
removes them all), so exit codes, timeouts, binary files are real.

Modelled (from daytona 0.226.1's client code and cloud-sdks.md §3):
- ``POST /sandbox`` (state ``started`` at once; ``code-toolbox-language`` label kept as sent;
  a duplicate name is 409; ``networkBlockAll`` is ``--network none``; env at create), ``GET
  /sandbox/{id|name}``, ``GET /sandbox?labels=<json>`` (AND of exact label matches, one page),
  ``DELETE /sandbox/{id}`` (a deleted or unknown sandbox is 404, so a second delete raises
  ``DaytonaNotFoundError``), ``toolbox-proxy-url``, ``last-activity``, ``autostop``, ``ttl``,
  snapshots (``_snapshots``: ``POST /sandbox/{id}/snapshot``, a ``docker commit`` without the
  sandbox's env; ``GET``, list and ``DELETE /snapshots``) and creating from a snapshot's name;
  ``GET /sandbox/{id}/ports/{port}/signed-preview-url`` (``_preview``: a URL on 127.0.0.1 that
  reaches the port inside the container).
- ``POST /process/execute``: ``<first of zsh, bash, sh> -c`` in the container; **stdout and
  stderr merged** into ``result``; a non-zero exit is a result; at ``timeout`` (seconds; **10
  when absent**) the process group is killed and the answer is 408 ``PROCESS_EXECUTION_TIMEOUT``
  **with no output**; a missing ``cwd`` is 400 [guess]; a stopped sandbox is 409 [guess].
- ``files/bulk-upload`` and ``files/bulk-download`` (multipart both ways, binary-safe; a missing
  file is a per-file ``error`` part the SDK turns into ``DaytonaFileNotFoundError``); relative
  paths resolve against ``/workspace``.
- ``DELETE /files?path=&recursive=`` and ``GET /files/info?path=`` as the daemon's DeleteFile and
  GetFileInfo (apps/daemon/pkg/toolbox/fs), done in the container: Go's ``os.Stat`` first, so
  links are followed (a dangling one is 404 ``FILE_NOT_FOUND``, a link to a directory "is a
  directory"), permission refused is 403 ``FILE_ACCESS_DENIED``, a directory without
  ``recursive`` 400, then ``rm -rf`` (``os.RemoveAll``: a link removed, never entered), 204;
  ``FileInfo`` with Go's mode string and times. GetFileInfo's 404/403 carry no error code [guess:
  it aborts with a bare status].
- Lifetimes, with ``minute_s`` seconds to a "minute": auto-stop after ``autoStopInterval`` minutes
  without an API/toolbox call (a process running inside is NOT activity), then delete when
  ``autoDeleteInterval`` is 0; ``ttlMinutes`` destroys at the deadline in any state.
- PTY sessions (``_pty``): ``/process/pty/create-connect`` (WebSocket: the shell on a real
  pseudo-terminal through a docker exec with a tty, the connected and exited control messages,
  the exit code in the close frame), ``/process/pty/{id}/resize`` and ``DELETE /process/pty/{id}``
  (the shell's process tree killed, as the daemon does).
- Faults: ``fail_next(status, retry_after=...)`` answers the next API call with that status;
  ``lose_next_exec_answer(status)`` runs the next ``process/execute`` command, then answers
  ``status`` or (0) closes the connection with no answer.

Not modelled: the other file routes (``GET /files`` listing, ``/files/folder``, ``/files/move``,
find, replace, search, permissions: the provider does not call them), sessions, listing and
reconnecting to PTY sessions, the socket.io event stream (404: the SDK falls back to polling),
builds (``buildInfo`` is recorded, the image is always ``praisonai-sandbox:latest``), resources
(recorded only), allow lists (recorded, not enforced), pagination, organisations and auth (any
bearer token is accepted), Daytona's own pause and archive (``stop``, ``start`` and ``autodelete``
are modelled), ``set_labels``' exact wire shape, snapshot builds (``create_snapshot`` is a ``docker
commit``, active at once).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler
from typing import Any

from fakes import docker
from fakes.daytona import _pty, _sandboxes
from fakes.daytona._preview import stop_previews
from fakes.daytona._wire import (
    multipart_fields,
    part_header,
    read_body,
    read_json,
    send_error,
    send_json,
)
from fakes.loopback import Loopback

__all__ = ["DaytonaFake"]


class DaytonaFake:
    """The fake server; see the module docstring. ``calls`` counts requests by route."""

    def __init__(self, *, minute_s: float = 60.0) -> None:
        self.fake_id = uuid.uuid4().hex[:12]
        self.minute_s = minute_s
        self.sandboxes: dict[str, dict[str, Any]] = {}
        self.snapshots: dict[str, str] = {}  # name -> docker image tag
        self.snapshot_ids: dict[str, str] = {}  # name -> id (Daytona's own, a UUID)
        #: deleted snapshots' images a container still used: removed when the fake closes
        self.deleted_images: list[str] = []
        self.calls: dict[str, int] = {}
        self.requests: list[tuple[str, str, Any]] = []  # (method, route, json body) of API calls
        self._faults: list[tuple[int, float | None]] = []
        #: ``process/execute`` answers to lose after the command ran: a status, or 0 (no answer:
        #: the connection is closed)
        self.lost_exec_answers: list[int] = []
        self.ptys = _pty.Sessions()
        #: set: the next uploads are cut after this many bytes, written in place (as daemons before
        #: the temp-file upload did) and answered 400 with the daemon's "errors"
        self.cut_uploads_at: int | None = None
        self._lock = threading.Lock()
        # the SDK opens many connections at once (one client per operation)
        self._serving = Loopback(self._dispatch, (self._lifetimes,), backlog=1024)

    @property
    def api_url(self) -> str:
        return f"{self._serving.url}/api"

    def _dispatch(
        self, handler: BaseHTTPRequestHandler, parts: list[str], query: dict[str, list[str]]
    ) -> None:
        from fakes.daytona._routes import route  # the routes module imports this one

        route(self, handler, handler.command, parts, {k: v[0] for k, v in query.items()})

    def __enter__(self) -> DaytonaFake:
        self._serving.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop serving and remove every container and snapshot image this fake made."""
        self._serving.stop()
        for box in list(self.sandboxes.values()):
            stop_previews(box)
        for container in _sandboxes.leftovers(self.fake_id):
            docker.remove(container)
        docker.remove_image(*self.snapshots.values(), *self.deleted_images)

    def fail_next(self, status: int, *, retry_after: float | None = None) -> None:
        """Answer the next control-plane call with ``status`` (429 carries ``Retry-After``)."""
        self._faults.append((status, retry_after))

    def lose_next_exec_answer(self, status: int = 0) -> None:
        """Run the next ``process/execute`` command, then answer ``status`` (0: close the
        connection with no answer at all), as when a proxy or the network loses the answer."""
        self.lost_exec_answers.append(status)

    # ---- sandboxes -----------------------------------------------------------------------------

    def find(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            for box in self.sandboxes.values():
                if box["state"] != "destroyed" and key in (box["id"], box["name"]):
                    return box
        return None

    def create(self, body: dict[str, Any]) -> tuple[int, Any]:
        name = body.get("name") or None
        if name and self.find(name):
            return 409, f"Sandbox with name {name} already exists"
        sandbox_id = str(uuid.uuid4())
        image = docker.IMAGE
        if body.get("snapshot"):
            if body["snapshot"] not in self.snapshots:
                return 404, f"Snapshot {body['snapshot']} not found"
            image = self.snapshots[body["snapshot"]]
        env = dict(body.get("env") or {})
        container = _sandboxes.start(
            f"daytona-fake-{self.fake_id}-{sandbox_id[:8]}",
            self.fake_id,
            env,
            network_none=bool(body.get("networkBlockAll")),
            image=image,
        )
        now = time.time()
        box = {
            "id": sandbox_id,
            "organizationId": "fake-org",
            "name": name or sandbox_id,
            "snapshot": body.get("snapshot"),
            "user": body.get("user") or "daytona",
            "env": env,
            "labels": dict(body.get("labels") or {}),
            "public": bool(body.get("public")),
            "networkBlockAll": bool(body.get("networkBlockAll")),
            "kvm": False,
            "networkAllowList": body.get("networkAllowList"),
            "domainAllowList": body.get("domainAllowList"),
            "target": body.get("target") or "us",
            "cpu": body.get("cpu") or 1,
            "gpu": body.get("gpu") or 0,
            "memory": body.get("memory") or 1,
            "disk": body.get("disk") or 3,
            "state": "started",
            "autoStopInterval": body.get("autoStopInterval", 15),
            "autoDeleteInterval": body.get("autoDeleteInterval", -1),
            "ttlMinutes": body.get("ttlMinutes") or 0,
            "buildInfo": _build_info(body.get("buildInfo"), now),
            "createdAt": _iso(now),
            "updatedAt": _iso(now),
            "lastActivityAt": _iso(now),
            "_container": container,
            "_created": now,
            "_activity": now,
        }
        with self._lock:
            self.sandboxes[sandbox_id] = box
        return 200, self.dto(box)

    def dto(self, box: dict[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in box.items() if not k.startswith("_")}
        out["lastActivityAt"] = _iso(box["_activity"])
        if box["ttlMinutes"]:
            out["autoDestroyAt"] = _iso(box["_created"] + box["ttlMinutes"] * self.minute_s)
        out["toolboxProxyUrl"] = self.api_url.removesuffix("/api") + "/toolbox"
        return out

    def destroy(self, box: dict[str, Any]) -> None:
        with self._lock:
            if box["state"] == "destroyed":
                return
            box["state"] = "destroyed"
        stop_previews(box)
        docker.remove(box["_container"])

    def stop_or_start(self, box: dict[str, Any], *, start: bool) -> None:
        """``stop`` (``docker stop``: the disk kept; deleted at once when ``autoDeleteInterval``
        is 0) or ``start`` (``docker start``); either on a sandbox already there is a no-op."""
        if start and box["state"] == "stopped":
            docker.docker("start", box["_container"])
            box["state"] = "started"
            self.touch(box)
        elif not start and box["state"] == "started":
            box["state"] = "stopped"
            docker.stop(box["_container"])
            if box["autoDeleteInterval"] == 0:
                self.destroy(box)

    def touch(self, box: dict[str, Any]) -> None:
        box["_activity"] = time.time()

    def _lifetimes(self) -> None:
        """Auto-stop on idleness (process activity does not count), auto-delete, ttl."""
        while not self._serving.closed.wait(min(1.0, self.minute_s / 4)):
            now = time.time()
            for box in list(self.sandboxes.values()):
                if box["state"] == "destroyed":
                    continue
                if box["ttlMinutes"] and now >= box["_created"] + box["ttlMinutes"] * self.minute_s:
                    self.destroy(box)
                elif (
                    box["state"] == "started"
                    and box["autoStopInterval"]
                    and (now - box["_activity"] >= box["autoStopInterval"] * self.minute_s)
                ):
                    box["state"] = "stopped"
                    docker.stop(box["_container"])
                    if box["autoDeleteInterval"] == 0:
                        self.destroy(box)


def _build_info(sent: dict[str, Any] | None, now: float) -> dict[str, Any] | None:
    if not sent:
        return None
    return {**sent, "createdAt": _iso(now), "updatedAt": _iso(now), "snapshotRef": docker.IMAGE}


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1000):03d}Z"


# Re-exported for the routes module.
_ = (json, multipart_fields, part_header, read_body, read_json, send_error, send_json)
