"""A loopback fake of the Fly.io Machines REST API (``/v1``), for the provider's real httpx client.

Start it (``with FlyioFake() as fake:``) and point the client at ``fake.api_url`` (any bearer token
is accepted). Every machine is a real local docker container of ``praisonai-sandbox:latest``
(label ``praisonai.test.flyio-fake=<fake id>``; ``close`` removes those and no others), so exit
codes, stdin, files and timeouts are real.

Modelled (cloud-sdks.md §5, fly-go's machine types):
- Apps: ``GET /v1/apps/{app}`` (404 when unknown), ``POST /v1/apps {app_name, org_slug}`` (201;
  a taken name is 422).
- Machines: ``POST /v1/apps/{app}/machines {name?, region?, config:{image, guest, env, metadata,
  init, auto_destroy, restart}}`` answers state ``created``; the machine turns ``started`` after
  ``start_delay_s`` (so ``started`` must be awaited); a name taken by a live machine is 409
  ``name_taken`` [guess at the status]. ``init.exec`` (or ``cmd``) is the container's PID 1.
  ``GET …/machines/{id}``; ``GET …/machines?metadata.K=V&include_deleted=`` (exact AND match;
  destroyed machines only with ``include_deleted=true``); ``GET …/wait?state=started&timeout=``
  (1-60 s else 400 ``invalid_argument``; expiry 408); ``POST …/stop`` (an empty body is 400;
  stop with ``{}``), ``POST …/start`` (a NEW container: the root filesystem is reset);
  ``DELETE …/machines/{id}`` (a started machine needs ``force=true`` or ``kill=true``, else 412
  [guess]; destroyed or unknown is 404).
- Exec: ``POST …/exec {cmd | command, stdin, timeout}`` (``cmd`` a string: a list is 400, as
  fly-go's ``MachineExecRequest.Cmd string`` cannot take one) (only on a ``started`` machine, else
  412 [guess]) answers ``{stdout, stderr, exit_code}`` with ``exit_code`` **omitted when 0**; output
  is decoded as UTF-8 with replacement (a JSON string, not binary-safe); past ``exec_limit_s``
  (30) or the request's ``timeout`` it answers 408 ``deadline_exceeded``, and what runs inside is
  left running (undocumented on Fly).
- Leases: ``POST …/lease {ttl, description}`` answers ``{"status": "success", "data": {nonce,
  expires_at, owner, description, version}}``; with the holder's nonce in the
  ``fly-machine-lease-nonce`` header it refreshes, ``DELETE …/lease`` with it releases,
  ``GET …/lease`` shows it. While another holder's lease is live, taking it and every stop,
  start and delete without its nonce are 409 (``hold_lease`` plays that other holder).
- Auth: ``FlyioFake(token=...)`` answers 401 to any other bearer token (default: any is accepted).
- Errors are ``{"error": ..., "status": ...}``. Faults: ``fail_next(status, retry_after=...)``
  answers the next call with that status before doing anything; ``fail_after_next(status)`` does
  the next call's work and then answers with that status (a lost answer: a retried create must
  not make a second machine); ``cut_after_next()`` does the work and closes the connection with
  no answer at all.

- ``auto_destroy``: a started machine whose PID 1 exited is destroyed (checked twice a second).

Not modelled: organisations, machine updates (so leases guard stop, start and delete), regions
(recorded), guest resources beyond docker's ``--cpus``/``--memory`` (GPUs are recorded), network policies,
volumes, suspend, services, ``config.files``, the metadata endpoints, per-machine rate limits
(429 only on demand), the ``octet-stream`` exec answer, ``restart`` policies (a machine whose PID 1
exits is destroyed with ``auto_destroy``, else left as it is).
"""

from __future__ import annotations

import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler
from typing import Any

from fakes import docker
from fakes.flyio import _machines
from fakes.loopback import Loopback

__all__ = ["CUT", "FlyioFake"]

#: The "status" of a fault that answers nothing: the connection is closed instead.
CUT = 0


class FlyioFake:
    """The fake server; see the module docstring. ``calls`` counts requests by ``METHOD kind``."""

    def __init__(
        self, *, start_delay_s: float = 0.3, exec_limit_s: float = 30.0, token: str | None = None
    ) -> None:
        self.token = token
        self.fake_id = uuid.uuid4().hex[:12]
        self.start_delay_s = start_delay_s
        self.exec_limit_s = exec_limit_s
        self.apps: dict[str, dict[str, Any]] = {}
        self.machines: dict[str, dict[str, Any]] = {}
        self.calls: dict[str, int] = {}
        self.requests: list[tuple[str, str, Any]] = []  # (method, path, json body)
        self.mutations: list[tuple[str, str, Any, str | None]] = []  # not GET: (..., lease nonce)
        self.answers: list[tuple[str, str, int]] = []  # (method, path, status) of dispatched calls
        self.faults: list[tuple[int, float | None, bool]] = []  # (status, retry-after, after the work)
        self.lock = threading.Lock()
        self._serving = Loopback(self._dispatch, (self._auto_destroy,), methods=("GET", "POST", "DELETE"))

    @property
    def api_url(self) -> str:
        return self._serving.url

    def _dispatch(
        self, handler: BaseHTTPRequestHandler, parts: list[str], query: dict[str, list[str]]
    ) -> None:
        from fakes.flyio._routes import route  # the routes module imports this one

        route(self, handler, parts, {k: v[0] for k, v in query.items()})

    def __enter__(self) -> FlyioFake:
        self._serving.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop serving and remove every container this fake made."""
        self._serving.stop()
        for container in _machines.leftovers(self.fake_id):
            docker.remove(container)

    def fail_next(self, status: int, *, retry_after: float | None = None) -> None:
        """Answer the next call with ``status`` without doing it (429 carries ``retry-after``)."""
        self.faults.append((status, retry_after, False))

    def fail_after_next(self, status: int) -> None:
        """Do the next call's work, then answer ``status`` instead of its result."""
        self.faults.append((status, None, True))

    def cut_after_next(self) -> None:
        """Do the next call's work, then close its connection with no answer (a lost answer on the
        way back: a proxy or the network dropped it)."""
        with self.lock:
            self.faults.append((CUT, None, True))

    def create_app(self, name: str, org_slug: str = "personal") -> None:
        """Make app ``name`` as ``POST /v1/apps`` would (an app made beforehand, with flyctl)."""
        self.apps[name] = {"id": name, "name": name, "organization": {"slug": org_slug}}

    def new_lease(self, machine: dict[str, Any], owner: str, description: str = "") -> dict[str, Any]:
        lease = {
            "nonce": uuid.uuid4().hex,
            "expires_at": int(time.time()) + 30,
            "owner": owner,
            "description": description,
            "version": machine.get("instance_id", ""),
        }
        machine["_lease"] = lease
        return lease

    def hold_lease(self, key: str, ttl_s: float, owner: str = "someone-else@example.com") -> str:
        """Another client takes the lease of machine ``key`` (id or name) for ``ttl_s``; its nonce."""
        machine = next(
            m for m in self.machines.values() if key in (m["id"], m["name"]) and m["state"] != "destroyed"
        )
        lease = self.new_lease(machine, owner, "held by a test")
        lease["expires_at"] = time.time() + ttl_s
        return str(lease["nonce"])

    # ---- machines ----------------------------------------------------------------------------

    def live(self, app: str, key: str) -> dict[str, Any] | None:
        """The machine of ``app`` with id or name ``key`` that is not destroyed."""
        with self.lock:
            for m in self.machines.values():
                if m["_app"] == app and m["state"] != "destroyed" and key in (m["id"], m["name"]):
                    return m
        return None

    def create_machine(self, app: str, body: dict[str, Any]) -> tuple[int, Any]:
        config = dict(body.get("config") or {})
        if not config.get("image"):
            return 400, "config.image is required"
        name = body.get("name") or f"m-{uuid.uuid4().hex[:8]}"
        with self.lock:
            if any(
                m["_app"] == app and m["name"] == name and m["state"] != "destroyed"
                for m in self.machines.values()
            ):
                return 409, ("name_taken", f"a machine named {name} already exists")
            machine_id = uuid.uuid4().hex[:14]
            machine = {"id": machine_id, "name": name, "state": "creating", "_app": app}
            self.machines[machine_id] = machine
        machine.update(
            region=body.get("region") or "fak",
            instance_id=uuid.uuid4().hex.upper()[:26],
            private_ip="fdaa::1",
            config=config,
            created_at=_iso(time.time()),
            events=[],
            _container=self._container(machine_id, config),
        )
        machine["state"] = "created"
        threading.Timer(self.start_delay_s, self._started, (machine,)).start()
        return 200, self.view(machine)

    def _container(self, machine_id: str, config: dict[str, Any]) -> str:
        init = config.get("init") or {}
        guest = config.get("guest") or {}
        return _machines.start(
            f"flyio-fake-{self.fake_id}-{machine_id}",
            self.fake_id,
            dict(config.get("env") or {}),
            init.get("exec") or init.get("cmd"),
            cpus=int(guest.get("cpus") or 1),
            memory_mb=int(guest.get("memory_mb") or 256),
        )

    def _started(self, machine: dict[str, Any]) -> None:
        with self.lock:
            if machine["state"] in ("created", "starting"):
                machine["state"] = "started"

    def stop(self, machine: dict[str, Any]) -> None:
        machine["state"] = "stopping"
        docker.stop(machine["_container"])
        machine["state"] = "stopped"

    def start(self, machine: dict[str, Any]) -> None:
        """A restart boots the image afresh: the old root filesystem is gone."""
        docker.remove(machine["_container"])
        machine["state"] = "starting"
        machine["_container"] = self._container(machine["id"], machine["config"])
        threading.Timer(self.start_delay_s, self._started, (machine,)).start()

    def destroy(self, machine: dict[str, Any]) -> None:
        machine["state"] = "destroying"
        docker.remove(machine["_container"])
        machine["state"] = "destroyed"

    def _auto_destroy(self) -> None:
        """A started machine with ``auto_destroy`` whose PID 1 has exited is destroyed."""
        while not self._serving.closed.wait(0.5):
            for machine in list(self.machines.values()):
                wanted = machine["state"] == "started" and machine["config"].get("auto_destroy")
                if wanted and not _machines.running(machine["_container"]) and machine["state"] == "started":
                    self.destroy(machine)

    def view(self, machine: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in machine.items() if not k.startswith("_")}


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
