"""A loopback fake of Tenki's gRPC API, for the real ``tenki`` SDK (1.4.1) to talk to.

Start it (``with TenkiFake() as fake:``) and point the SDK at ``fake.base_url`` (``base_url=`` or
``TENKI_API_ENDPOINT``; an ``http://`` URL makes the SDK use a plaintext channel) with a key in
``fake.keys`` (``tk_fake`` by default). One ``grpc.server`` serves both services from the wheel's
own generated stubs (``sandbox_pb2_grpc``), so the SDK's request building, its data-plane
bootstrap (endpoint + session credential), its Run stream and its error mapping run unchanged.
Each sandbox is a real local docker container of ``praisonai-sandbox:latest`` labelled
``praisonai.test.tenki-fake=<fake id>`` (``close`` removes them and the snapshot images).

Modelled (from the wheel's source and cloud-sdks.md §4):
- ``CreateSession``: resource ranges checked (the SDK checks them first), ``env`` at create (the
  container's env), ``allow_outbound=False`` is ``--network none``, the egress allowlist and
  ``idle_timeout_minutes`` recorded **and ignored** (as Tenki does), ``max_duration`` sets
  ``timeout_at``, at which the sandbox is terminated; ``snapshot_id`` starts from that image. The
  answer carries the data-plane endpoint (this server) and a session credential, route VERIFIED.
- ``GetSession`` (a terminated sandbox still answers, state TERMINATED; unknown is NOT_FOUND),
  ``ListWorkspaceSandboxes`` (filters by tags, every given tag must be present; **metadata is not
  a filter**; terminated ones only with ``include_terminated``; one page), ``TerminateSession``
  (the second is FAILED_PRECONDITION "already terminated", which the SDK maps to
  ``SessionTerminatedError``), ``ExtendSession``, ``CreateSessionCredential``,
  ``CreateSnapshot`` (a ``docker commit``, READY at once), ``GetSnapshot``,
  ``ListWorkspaceSnapshots``, ``PauseSession`` (``docker pause``, PAUSED at once; the data
  plane refuses a paused sandbox) and ``ResumeSession`` (``docker unpause``,
  then ``/tmp`` emptied, as Tenki clears it).
- The data plane (``_data``): ``Run`` (stdin, stdout/stderr as bytes, exit code, signals, the
  guest-enforced timeout with partial output, a dropped stream kills the command) and ``Stat``.
  ``ReadFile``/``WriteFile`` (relative to ``/home/tenki``; an absolute path outside it is
  INVALID_ARGUMENT [guess at the code; the README says it must stay inside]; a missing file is
  NOT_FOUND "no such file or directory", the SDK's ``tenki.FileNotFoundError``).
  A missing cwd ends the Run with ``exit_code=-1, errno=2`` [guess: the wheel only says it fails
  before the process starts]. Relative cwds resolve under ``/home/tenki``.
- Auth: ``authorization: Bearer <key>`` must be one of ``keys`` (else UNAUTHENTICATED); the data
  plane wants the session credential in ``x-tenki-session-cert``.
- Faults: ``fail_next(code, message, after=...)`` answers the next control-plane call with that
  status; ``after=True`` does the work first (a lost answer, as a gateway 5xx after the fact).
  RESOURCE_EXHAUSTED "rate limit exceeded" is Tenki's 429; UNAVAILABLE/INTERNAL its 5xx.

Not modelled: ``RunStart.privileged`` (recorded in ``privileged``; every Run is root's here, where
Tenki may run an unprivileged one as its own user), the other file RPCs (``*Stream``, ``Mkdir``,
``List``, ``Remove``: UNIMPLEMENTED), ``WhoAmI``, ``pause_async``/``wait_paused`` (pauses complete
at once), templates, volumes, previews, SSH, Dial, pagination, workspaces, snapshot durability
states, resource enforcement (cpu/memory/disk are recorded only), egress allowlist enforcement,
WaitSession (sandboxes are RUNNING at once, so the SDK never waits).
"""

from __future__ import annotations

import importlib
import threading
import time
import uuid
from concurrent import futures
from typing import Any

import grpc  # type: ignore[import-untyped]

from fakes import docker
from fakes.tenki import _sandboxes

# The wheel's generated modules (the SDK's own wire): private to the SDK, and untyped.
pb: Any = importlib.import_module("tenki_sandbox._internal.proto.tenki.sandbox.v1.sandbox_pb2")
pb_grpc: Any = importlib.import_module("tenki_sandbox._internal.proto.tenki.sandbox.v1.sandbox_pb2_grpc")

__all__ = ["TenkiFake"]


class TenkiFake:
    """The fake server; see the module docstring. ``calls`` counts RPCs by method name."""

    def __init__(self, *, keys: tuple[str, ...] = ("tk_fake",)) -> None:
        from fakes.tenki._control import Control
        from fakes.tenki._data import DataPlane

        self.fake_id = uuid.uuid4().hex[:12]
        self.keys = set(keys)
        self.sessions: dict[str, dict[str, Any]] = {}
        self.snapshots: dict[str, dict[str, Any]] = {}
        self.calls: dict[str, int] = {}
        self.argvs: list[list[str]] = []  # every Run's argv, as the guest got it
        self.privileged: list[bool] = []  # every Run's ``privileged`` (each runs as root here)
        #: set: Run stdin passes this many more bytes, then the stream is cut (the command reads
        #: EOF, later bytes are dropped), as a connection lost mid-transfer
        self.stdin_budget: int | None = None
        self.lock = threading.Lock()
        self._faults: list[tuple[grpc.StatusCode, str, bool]] = []
        # A Run stream holds a worker for the life of its command: room for hundreds at once.
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=512))
        pb_grpc.add_SandboxServiceServicer_to_server(Control(self), self._server)
        pb_grpc.add_SandboxSessionDataPlaneServiceServicer_to_server(DataPlane(self), self._server)
        self.port = self._server.add_insecure_port("127.0.0.1:0")
        self._closed = threading.Event()
        self._clock = threading.Thread(target=self._lifetimes, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> TenkiFake:
        self._server.start()
        self._clock.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop serving and remove every container and snapshot image this fake made."""
        self._closed.set()
        self._server.stop(grace=None)
        for container in _sandboxes.leftovers(self.fake_id):
            docker.remove(container)
        for snap in self.snapshots.values():
            docker.remove_image(snap["_image"])

    def fail_next(self, code: grpc.StatusCode, message: str, *, after: bool = False) -> None:
        """Answer the next control-plane call with ``code``; ``after``: once its work is done."""
        self._faults.append((code, message, after))

    # ---- used by the servicers ------------------------------------------------------------------

    def count(self, method: str) -> None:
        with self.lock:
            self.calls[method] = self.calls.get(method, 0) + 1

    def enter(self, method: str, context: Any) -> None:
        """Count a control-plane call, check its key, and fail it now if a fault says so."""
        self.count(method)
        auth = dict(context.invocation_metadata()).get("authorization", "")
        if auth.removeprefix("Bearer ") not in self.keys:
            _sandboxes.abort(context, grpc.StatusCode.UNAUTHENTICATED, "invalid or revoked API key")
        if self._faults and not self._faults[0][2]:
            code, message, _ = self._faults.pop(0)
            _sandboxes.abort(context, code, message)

    def answer(self, method: str, response: Any, context: Any) -> Any:
        """``response``, unless a fault says the answer is lost after the work was done."""
        if self._faults and self._faults[0][2]:
            code, message, _ = self._faults.pop(0)
            _sandboxes.abort(context, code, message)
        return response

    def find(self, instance_id: str) -> dict[str, Any] | None:
        """The live sandbox tagged with our instance id, if any."""
        with self.lock:
            for box in self.sessions.values():
                if box["state"] == "RUNNING" and box["metadata"].get("praisonai.instance") == instance_id:
                    return box
        return None

    def terminate(self, box: dict[str, Any]) -> None:
        with self.lock:
            if box["state"] == "TERMINATED":
                return
            box["state"] = "TERMINATED"
        docker.remove(box["_container"])

    def _lifetimes(self) -> None:
        """``max_duration``: terminated at ``timeout_at``. There is no idle timeout (Tenki's is ignored)."""
        while not self._closed.wait(0.25):
            now = time.time()
            for box in list(self.sessions.values()):
                if box["state"] == "RUNNING" and box["timeout_at"] is not None and now >= box["timeout_at"]:
                    self.terminate(box)
