"""The fake's agent-sandbox surface: the CRDs' API groups and a stand-in for their controllers.

It models the v1beta1 objects the provider uses (agent-sandbox at 2fd412d5) — it is NOT the
agent-sandbox controller, only its observable contract, reconciled by a loop in the fake:
- discovery of ``extensions.agents.x-k8s.io/v1beta1`` (sandboxtemplates, sandboxwarmpools,
  sandboxclaims) and ``agents.x-k8s.io/v1beta1`` (sandboxes), only with ``fake.agent_sandbox``
  (404 otherwise, as a cluster without the CRDs answers);
- create/get/list/watch/delete of those objects (409/404 Status bodies);
- a SandboxWarmPool keeps ``spec.replicas`` unclaimed Sandboxes (``generateName`` ``<pool>-``,
  label ``agents.x-k8s.io/warm-pool-sandbox``), each with a pod of the same name from its
  SandboxTemplate's ``spec.podTemplate`` (a docker container, as every pod of the fake), and
  replenishes them once claimed;
- a SandboxClaim adopts a pooled Sandbox whose pod is Running: the pool label goes, the claim's
  ``spec.additionalPodMetadata`` is merged onto the pod, the Sandbox gets the
  ``agents.x-k8s.io/pod-name`` annotation, and the claim ``status.sandbox.name`` with ``Ready``
  True in one update. Pod labels in ``additionalPodMetadata`` outside the controller's default
  allowed domain (``sandbox.users.io``) make the claim ``InvalidMetadata``, as its check does. With no such
  sandbox (an empty pool) the claim stays ``Ready`` False
  (``SandboxNotReady``); an unknown pool is ``WarmPoolNotFound``. Deleting a claim deletes its
  sandbox and pod (as the owner reference would); deleting a pool deletes its unclaimed ones.
Not modelled: cold claims without a pool, templates' network policies, lifecycle/shutdownTime,
env injection, PVCs, update strategies, status subresources and patches.
"""

from __future__ import annotations

import copy
import threading
import time
import uuid
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fakes.kubernetes import KubernetesFake

CLAIM_GROUP, SANDBOX_GROUP, VERSION = "extensions.agents.x-k8s.io", "agents.x-k8s.io", "v1beta1"
KINDS = {
    "sandboxtemplates": "SandboxTemplate",
    "sandboxwarmpools": "SandboxWarmPool",
    "sandboxclaims": "SandboxClaim",
    "sandboxes": "Sandbox",
}
GROUPS = {
    CLAIM_GROUP: ["sandboxtemplates", "sandboxwarmpools", "sandboxclaims"],
    SANDBOX_GROUP: ["sandboxes"],
}
POOL_LABEL = "agents.x-k8s.io/warm-pool-sandbox"
POD_NAME = "agents.x-k8s.io/pod-name"
LABEL_DOMAIN = "sandbox.users.io"  # the controller's default allowlist for claim pod labels


def discovery(group: str) -> dict[str, Any]:
    """The group's APIResourceList (v1beta1)."""
    verbs = ["create", "delete", "get", "list", "watch"]
    resources = [
        {"name": p, "singularName": KINDS[p].lower(), "namespaced": True, "kind": KINDS[p], "verbs": verbs}
        for p in GROUPS[group]
    ]
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{VERSION}",
        "resources": resources,
    }


def objects(
    fake: KubernetesFake, method: str, plural: str, ns: str, name: str | None, body: Any
) -> tuple[int, Any]:
    """create / get / delete of one object (list and watch are the routes' generic ones)."""
    if plural not in KINDS:
        return 404, ("NotFound", "the server could not find the requested resource")
    with fake.cond:
        if name is None and method == "POST":
            return _create(fake, plural, ns, dict(body or {}))
        found = fake.custom.get((plural, ns, str(name)))
        if found is None:
            return 404, ("NotFound", f'{plural}.{_group(plural)} "{name}" not found')
        if method == "GET":
            return 200, found
        if method != "DELETE":
            return 405, ("MethodNotAllowed", f"{method} is not supported here")
        _delete(fake, plural, ns, str(name))
    _remove_pods(fake, ns, _orphans(fake, plural, found))
    return 200, found


def _group(plural: str) -> str:
    return SANDBOX_GROUP if plural == "sandboxes" else CLAIM_GROUP


def _create(fake: KubernetesFake, plural: str, ns: str, obj: dict[str, Any]) -> tuple[int, Any]:
    """Store a new object (caller holds ``cond``)."""
    meta = obj.setdefault("metadata", {})
    if not meta.get("name") and meta.get("generateName"):
        meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
    key = (plural, ns, str(meta.get("name")))
    if key in fake.custom:
        return 409, ("AlreadyExists", f'{plural}.{_group(plural)} "{key[2]}" already exists')
    meta.update(namespace=ns, uid=str(uuid.uuid4()), creationTimestamp=_iso())
    obj.setdefault("kind", KINDS[plural])
    obj.setdefault("status", {})
    fake.custom[key] = obj
    fake.changed("ADDED", obj)
    return 201, obj


def _delete(fake: KubernetesFake, plural: str, ns: str, name: str) -> None:
    obj = fake.custom.pop((plural, ns, name))
    obj["metadata"]["deletionTimestamp"] = _iso()
    fake.changed("DELETED", obj)


def _orphans(fake: KubernetesFake, plural: str, obj: dict[str, Any]) -> list[str]:
    """The sandboxes (and so pods) that go with a deleted claim or pool, removed from the store."""
    ns = obj["metadata"]["namespace"]
    with fake.cond:
        if plural == "sandboxclaims":
            names = [str((obj["status"].get("sandbox") or {}).get("name") or "")]
        elif plural == "sandboxwarmpools":
            names = [o["metadata"]["name"] for o in _members(fake, ns, obj["metadata"]["name"])]
        else:
            names = [obj["metadata"]["name"]]
        names = [n for n in names if n]
        for name in names:
            if ("sandboxes", ns, name) in fake.custom:
                _delete(fake, "sandboxes", ns, name)
    return names


def _remove_pods(fake: KubernetesFake, ns: str, names: list[str]) -> None:
    for name in names:
        fake.delete_pod(ns, name)


def run(fake: KubernetesFake, closed: threading.Event) -> None:
    """The controllers' loop: keep pools full, bind waiting claims."""
    while not closed.wait(0.1):
        if fake.agent_sandbox:
            reconcile(fake)


def reconcile(fake: KubernetesFake) -> None:
    with fake.cond:
        pools = [o for (p, _, _), o in fake.custom.items() if p == "sandboxwarmpools"]
        claims = [o for (p, _, _), o in fake.custom.items() if p == "sandboxclaims"]
    for pool in pools:
        _fill(fake, pool)
    for claim in claims:
        if not (claim["status"].get("sandbox") or {}).get("name"):
            _bind(fake, claim)


def _members(fake: KubernetesFake, ns: str, pool: str) -> list[dict[str, Any]]:
    """The pool's unclaimed sandboxes (caller holds ``cond``)."""
    found = [o for (p, s, _), o in fake.custom.items() if p == "sandboxes" and s == ns]
    return [o for o in found if (o["metadata"].get("labels") or {}).get(POOL_LABEL) == pool]


def _fill(fake: KubernetesFake, pool: dict[str, Any]) -> None:
    """Create sandboxes (and their pods) up to the pool's replicas; report its status."""
    ns, name = pool["metadata"]["namespace"], pool["metadata"]["name"]
    spec = pool.get("spec") or {}
    with fake.cond:
        template = fake.custom.get(
            ("sandboxtemplates", ns, str((spec.get("sandboxTemplateRef") or {}).get("name")))
        )
        members = _members(fake, ns, name)
        ready = sum(1 for m in members if _running(fake, ns, m["metadata"]["name"]))
        status = {"replicas": len(members), "readyReplicas": ready, "selector": f"{POOL_LABEL}={name}"}
        if pool["status"] != status:
            pool["status"] = status
            fake.changed("MODIFIED", pool)
        missing = int(spec.get("replicas") or 0) - len(members) if template else 0
        made = []
        for _ in range(max(0, missing)):
            pod_template = copy.deepcopy((template or {})["spec"]["podTemplate"])
            sandbox = {
                "metadata": {"generateName": f"{name}-", "labels": {POOL_LABEL: name}},
                "spec": {"podTemplate": pod_template},
            }
            _create(fake, "sandboxes", ns, sandbox)
            sandbox["metadata"]["annotations"] = {POD_NAME: sandbox["metadata"]["name"]}
            made.append((sandbox["metadata"]["name"], pod_template))
    for sandbox_name, pod_template in made:
        meta = pod_template.get("metadata") or {}
        labels = {**(meta.get("labels") or {}), POOL_LABEL: name}
        annotations = dict(meta.get("annotations") or {})
        pod_meta = {"name": sandbox_name, "labels": labels, "annotations": annotations}
        fake.create_pod(
            ns, {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": pod_template["spec"]}
        )


def _running(fake: KubernetesFake, ns: str, name: str) -> bool:
    pod = fake.pods.get((ns, name))
    return pod is not None and pod["status"]["phase"] == "Running"


def _bind(fake: KubernetesFake, claim: dict[str, Any]) -> None:
    """Adopt a ready sandbox of the claim's pool, or say why the claim waits."""
    ns = claim["metadata"]["namespace"]
    pool = str(((claim.get("spec") or {}).get("warmPoolRef") or {}).get("name"))
    with fake.cond:
        if (ns, claim["metadata"]["name"]) not in {
            (s, n) for (p, s, n) in fake.custom if p == "sandboxclaims"
        }:
            return  # deleted meanwhile
        extra = (claim.get("spec") or {}).get("additionalPodMetadata") or {}
        if bad := [
            k for k in extra.get("labels") or {} if k.partition("/")[0] != LABEL_DOMAIN or "/" not in k
        ]:
            why = f"label domain of {bad[0]!r} is not in the allowlist ({LABEL_DOMAIN})"
            return _waiting(fake, claim, "InvalidMetadata", why)
        if ("sandboxwarmpools", ns, pool) not in fake.custom:
            return _waiting(fake, claim, "WarmPoolNotFound", f'SandboxWarmPool "{pool}" not found')
        ready = [m for m in _members(fake, ns, pool) if _running(fake, ns, m["metadata"]["name"])]
        if not ready:
            return _waiting(fake, claim, "SandboxNotReady", f'no ready sandbox in warm pool "{pool}"')
        sandbox = ready[0]
        name = sandbox["metadata"]["name"]
        del sandbox["metadata"]["labels"][POOL_LABEL]
        owner = {"kind": "SandboxClaim", "name": claim["metadata"]["name"], "uid": claim["metadata"]["uid"]}
        sandbox["metadata"]["ownerReferences"] = [{**owner, "controller": True}]
        fake.changed("MODIFIED", sandbox)
        pod = fake.pods[(ns, name)]
        for key in ("labels", "annotations"):
            pod["metadata"][key] = {**(pod["metadata"].get(key) or {}), **(extra.get(key) or {})}
        pod["metadata"]["labels"].pop(POOL_LABEL, None)
        fake.changed("MODIFIED", pod)
        ready_cond = {
            "type": "Ready",
            "status": "True",
            "reason": "SandboxReady",
            "lastTransitionTime": _iso(),
        }
        claim["status"] = {"sandbox": {"name": name, "podIPs": ["10.0.0.1"]}, "conditions": [ready_cond]}
        fake.changed("MODIFIED", claim)
    return None


def _waiting(fake: KubernetesFake, claim: dict[str, Any], reason: str, message: str) -> None:
    """Ready False with ``reason`` (caller holds ``cond``); an event only when it changes."""
    cond = {"type": "Ready", "status": "False", "reason": reason, "message": message}
    old = [{k: c.get(k) for k in cond} for c in claim["status"].get("conditions") or []]
    if old != [cond]:
        claim["status"]["conditions"] = [{**cond, "lastTransitionTime": _iso()}]
        fake.changed("MODIFIED", claim)


def _iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
