"""A loopback fake of the Kubernetes API server's pod surface, for the REAL ``kubernetes`` client
(and ``kubectl``), pointed at it by a kubeconfig (``fake.write_kubeconfig(path)``).

This is a contract test of our client code against the API server's recorded semantics — never
a performance claim: it has no scheduler, kubelet, etcd, image pulls or admission, so its timings
say nothing about a cluster.

Start it (``with KubernetesFake() as fake:``); plain HTTP on 127.0.0.1, any bearer token accepted. Every
pod is a real local docker container of its own image (label ``praisonai.test.k8s-fake=<fake
id>``; ``close`` removes those and no others), so exec, exit codes, stdin, files and timeouts are real.

Modelled:
- Discovery: ``/version``, ``/api``, ``/api/v1``, ``/apis``, ``/apis/networking.k8s.io/v1``.
- Pods (``/api/v1/namespaces/{ns}/pods[/{name}]``, ``/api/v1/pods``): create (``generateName``
  too; a taken name is 409 ``AlreadyExists``), get (404 ``NotFound``), list with
  ``labelSelector`` (``k=v``, ``k==v``, ``k!=v``, ``k``, ``!k``, comma = AND) and
  ``fieldSelector=metadata.name=…``, delete (answers the pod; the container goes at once), and
  ``watch=1`` (ADDED for the current matches, then MODIFIED/DELETED until ``timeoutSeconds``).
  Errors are ``metav1.Status`` bodies. A pod is ``Pending`` (``PodScheduled`` True) until its
  container started, then ``Running`` with ``Ready``; with ``fake.unschedulable`` it stays Pending
  with ``PodScheduled`` False ``Unschedulable``; a missing image leaves it Pending with a waiting
  container (``ErrImageNeverPull``). ``restartPolicy`` is taken as Never: an exited container makes
  the pod ``Succeeded``/``Failed``; ``activeDeadlineSeconds`` fails it (``DeadlineExceeded``).
  The spec's env, workingDir, command/args, runAsUser/Group, readOnlyRootFilesystem,
  allowPrivilegeEscalation, capabilities (drop and add), emptyDir mounts (tmpfs) and cpu/memory
  limits reach docker.
- PersistentVolumeClaims (``/api/v1/namespaces/{ns}/persistentvolumeclaims[/{name}]``: create,
  get, list by ``labelSelector``, delete), each a docker volume that a pod's
  ``persistentVolumeClaim`` volume mounts, and StorageClasses
  (``/apis/storage.k8s.io/v1/storageclasses``: one, the default unless
  ``fake.default_storage_class`` is False) — see ``_volumes``.
- With ``fake.volume_snapshots``: the CSI snapshot CRDs (``snapshot.storage.k8s.io/v1``),
  VolumeSnapshotClasses and VolumeSnapshots, and claims whose ``dataSource`` is one — see
  ``_snapshots``.
- Services (``/api/v1/namespaces/{ns}/services[/{name}]``: create, get, list by
  ``labelSelector``, delete): a Service's name resolves, in its namespace, to the pods it selects
  that started after it (each pod is on a docker network of its namespace, under the names of
  the Services that select it: network aliases; no cluster IP routes, no ports remapped).
- NetworkPolicies (``/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies[/{name}]``):
  stored, and egress enforced for the pods a policy selects by ``matchLabels`` when they start
  (as a CNI that enforces policies would; see ``_net``): no egress rules is ``--network none``;
  rules whose peers are all one ``podSelector`` (besides DNS-only rules) put the pod on an
  internal docker network shared with the selected pods only. Other egress rules (``ipBlock``,
  ``namespaceSelector``), ingress rules and ports are stored, not enforced.
- ``pods/{name}/portforward`` over WebSocket (``v4.channel.k8s.io``, one port per connection,
  reached in the pod's network namespace; see ``_portforward``); with ``fake.port_forwarding``
  False it is 403 Forbidden, as RBAC without ``pods/portforward`` answers.
- ``pods/{name}/exec`` over WebSocket (see ``_exec``): ``v5.channel.k8s.io`` and
  ``v4.channel.k8s.io`` (``protocols`` limits what the fake offers, to test v4 servers); with
  ``tty=true`` on a real pseudo-terminal, resized from channel 4 (see ``_tty``).

- agent-sandbox (with ``agent_sandbox=True``): its CRDs' API groups, warm pools, claims and
  sandboxes, reconciled by a stand-in for its controllers — see ``_agent_sandbox``; not the real controller.

Not modelled: authentication and RBAC, namespaces as objects, update/patch, resourceVersion
semantics beyond a counter, graceful deletion, SPDY, attach/logs, other kinds;
claims are never resized, and a deleted claim's volume goes at once (no pvc-protection finalizer).
Faults: ``fail_next(status)`` answers the next API call (not exec) with that status;
``lose_next_answer(status)`` performs the next create, then drops the connection (0) or answers
that status instead of the object.
"""

from __future__ import annotations

import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from fakes import docker
from fakes.kubernetes import _agent_sandbox, _net, _pods, _volumes
from fakes.loopback import Loopback

__all__ = ["KubernetesFake"]

PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")


class KubernetesFake:
    """The fake server; see the module docstring. ``writes`` counts create/delete calls."""

    def __init__(self, *, protocols: tuple[str, ...] = PROTOCOLS, agent_sandbox: bool = False) -> None:
        self.fake_id = uuid.uuid4().hex[:12]
        self.protocols = protocols
        self.agent_sandbox = agent_sandbox  # serve the agent-sandbox CRDs (see ``_agent_sandbox``)
        self.custom: dict[tuple[str, str, str], dict[str, Any]] = {}  # (plural, ns, name): object
        self.unschedulable = False
        self.port_forwarding = True  # False: pods/portforward is Forbidden, as under a strict RBAC
        self.pods: dict[tuple[str, str], dict[str, Any]] = {}
        self.policies: dict[tuple[str, str], dict[str, Any]] = {}
        self.services: dict[tuple[str, str], dict[str, Any]] = {}  # Services (``_net``)
        self.networks: dict[str, tuple[str, dict[str, str]]] = {}  # internal network: (ns, selector)
        self.claims: dict[tuple[str, str], dict[str, Any]] = {}  # PersistentVolumeClaims (``_volumes``)
        self.default_storage_class = True  # False: the cluster has no default StorageClass
        self.volume_snapshots = False  # True: the CSI snapshot CRDs are installed (``_snapshots``)
        self.volume_snapshots_forbidden = False  # True: installed, but 403 to us (a namespaced role)
        self.requests: list[tuple[str, str]] = []  # (method, path)
        self.exec_log: list[str] = []  # the channel of every client message on an exec stream
        self.write_times: list[float] = []
        self.faults: list[int] = []
        self.lost_answers: list[int] = []
        self.cond = threading.Condition()
        self.events: list[tuple[int, str, dict[str, Any]]] = []  # (version, type, pod)
        self.version = 1
        self._serving = Loopback(
            self._dispatch, (self._reap, lambda: _agent_sandbox.run(self, self._serving.closed))
        )

    @property
    def url(self) -> str:
        return self._serving.url

    def write_kubeconfig(self, path: Path, namespace: str = "default") -> Path:
        """A kubeconfig whose current context is this fake (and ``namespace``)."""
        path.write_text(
            "apiVersion: v1\nkind: Config\n"
            f"clusters:\n- name: fake\n  cluster:\n    server: {self.url}\n"
            "users:\n- name: fake\n  user:\n    token: fake-token\n"
            "contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: fake\n"
            f"    namespace: {namespace}\n"
            "current-context: fake\n"
        )
        return path

    def _dispatch(
        self, handler: BaseHTTPRequestHandler, parts: list[str], query: dict[str, list[str]]
    ) -> None:
        from fakes.kubernetes._routes import route  # the routes module imports this one

        route(self, handler, parts, query)

    def __enter__(self) -> KubernetesFake:
        self._serving.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop serving and remove every container, docker network and volume this fake made."""
        self._serving.stop()
        for container in _pods.leftovers(self.fake_id):
            docker.remove(container)
        _net.remove_networks(self.fake_id)
        _volumes.remove(*_volumes.leftovers(self.fake_id))

    def fail_next(self, status: int) -> None:
        self.faults.append(status)

    def lose_next_answer(self, status: int = 0) -> None:
        """Perform the next create (POST), then lose its answer: ``0`` drops the connection, a
        status answers that error instead (a proxy's 5xx after the API server acted)."""
        self.lost_answers.append(status)

    # ---- pods --------------------------------------------------------------------------------

    def changed(self, kind: str, pod: dict[str, Any]) -> None:
        """Record a change (caller holds ``cond``): a new resourceVersion, an event for watchers."""
        self.version += 1
        pod["metadata"]["resourceVersion"] = str(self.version)
        self.events.append((self.version, kind, pod))
        self.cond.notify_all()

    def create_pod(self, ns: str, pod: dict[str, Any]) -> tuple[int, Any]:
        meta = pod.setdefault("metadata", {})
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
        name = meta.get("name")
        if not name or not (pod.get("spec") or {}).get("containers"):
            return 422, (
                "Invalid",
                f"Pod {name!r} is invalid: metadata.name and spec.containers are required",
            )
        with self.cond:
            if (ns, name) in self.pods:
                return 409, ("AlreadyExists", f'pods "{name}" already exists')
            meta.update(namespace=ns, uid=str(uuid.uuid4()), creationTimestamp=_iso(time.time()))
            pod["status"] = {"phase": "Pending", "conditions": [_cond("PodScheduled", "True")]}
            pod["_started"] = time.time()
            self.pods[(ns, name)] = pod
            self.changed("ADDED", pod)
        threading.Thread(target=self._start, args=(ns, name, pod), daemon=True).start()
        return 201, pod

    def _start(self, ns: str, name: str, pod: dict[str, Any]) -> None:
        if self.unschedulable:
            with self.cond:
                pod["status"]["conditions"] = [
                    _cond("PodScheduled", "False", "Unschedulable", "0/1 nodes are available")
                ]
                self.changed("MODIFIED", pod)
            return
        container_name = f"k8s-fake-{self.fake_id}-{ns}-{name}"
        claimed = [
            v["persistentVolumeClaim"]["claimName"]
            for v in pod["spec"].get("volumes") or []
            if "persistentVolumeClaim" in v
        ]
        claims = {c: _volumes.volume_of(self, ns, c) for c in claimed}
        missing = [c for c, volume in claims.items() if volume is None]
        if missing:  # a kubelet would leave it Pending; failing to create says the same here
            cid, why = None, f'persistentvolumeclaim "{missing[0]}" not found'
        else:
            volumes = {c: str(v) for c, v in claims.items()}
            network, aliases = _net.plan(self, ns, pod)
            cid, why = _pods.start(
                container_name, self.fake_id, pod, volumes, network=network, aliases=aliases
            )
            if cid is not None and network != "none":
                _net.joined(self, ns, pod, cid)  # before it is Ready: its peers reach it from then on
        with self.cond:
            if self.pods.get((ns, name)) is not pod:  # deleted while it started
                if cid:
                    docker.remove(cid)
                return
            status = pod["status"]
            box = pod["spec"]["containers"][0]["name"]
            if cid is None:
                reason = "ErrImageNeverPull" if "No such image" in why else "CreateContainerError"
                status["containerStatuses"] = [
                    _box(box, {"waiting": {"reason": reason, "message": why}}, False)
                ]
            else:
                pod["_container"] = cid
                status.update(phase="Running", startTime=_iso(time.time()), podIP="10.0.0.1")
                status["conditions"] += [
                    _cond("Initialized", "True"),
                    _cond("ContainersReady", "True"),
                    _cond("Ready", "True"),
                ]
                status["containerStatuses"] = [_box(box, {"running": {"startedAt": _iso(time.time())}}, True)]
            self.changed("MODIFIED", pod)

    def delete_pod(self, ns: str, name: str) -> tuple[int, Any]:
        with self.cond:
            pod = self.pods.pop((ns, name), None)
            if pod is None:
                return 404, ("NotFound", f'pods "{name}" not found')
            pod["metadata"]["deletionTimestamp"] = _iso(time.time())
            self.changed("DELETED", pod)
        if pod.get("_container"):
            docker.remove(pod["_container"])
        return 200, pod

    def _reap(self) -> None:
        """The kubelet's part: an exited container ends its pod; a deadline fails it."""
        while not self._serving.closed.wait(0.5):
            for pod in [p for p in list(self.pods.values()) if p["status"]["phase"] == "Running"]:
                deadline = pod["spec"].get("activeDeadlineSeconds")
                if deadline and time.time() - pod["_started"] > deadline:
                    docker.remove(pod["_container"])
                    self._ended(pod, "Failed", 137, "DeadlineExceeded")
                    continue
                running, code = _pods.state(pod["_container"])
                if not running:
                    self._ended(pod, "Succeeded" if code == 0 else "Failed", code, None)

    def _ended(self, pod: dict[str, Any], phase: str, code: int, reason: str | None) -> None:
        with self.cond:
            if pod["status"]["phase"] != "Running":
                return
            status = pod["status"]
            status["phase"] = phase
            if reason:
                status["reason"] = reason
            box = pod["spec"]["containers"][0]["name"]
            status["containerStatuses"] = [_box(box, {"terminated": {"exitCode": code}}, False)]
            status["conditions"] = [c for c in status["conditions"] if c["type"] == "PodScheduled"]
            self.changed("MODIFIED", pod)


def _cond(kind: str, status: str, reason: str | None = None, message: str | None = None) -> dict[str, Any]:
    found = {"type": kind, "status": status, "lastTransitionTime": _iso(time.time())}
    return {**found, **({"reason": reason, "message": message} if reason else {})}


def _box(name: str, state: dict[str, Any], ready: bool) -> dict[str, Any]:
    return {"name": name, "state": state, "ready": ready, "restartCount": 0, "image": "", "imageID": ""}


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
