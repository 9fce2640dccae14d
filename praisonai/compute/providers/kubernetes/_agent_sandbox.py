"""Warm pools of kubernetes-sigs/agent-sandbox: a ``SandboxClaim`` against a ``SandboxWarmPool``.

Modelled on the v1beta1 API (``extensions.agents.x-k8s.io/v1beta1`` ``SandboxClaim`` and
``SandboxWarmPool``, ``agents.x-k8s.io/v1beta1`` ``Sandbox``; agent-sandbox at 2fd412d5).
A claim names its pool (``spec.warmPoolRef.name``) and carries our identity for the pod
(``spec.additionalPodMetadata``, which the controller merges onto the adopted pod); the claim
controller adopts a ready sandbox of the pool and writes ``status.sandbox.name`` and the ``Ready``
condition together. The pod is the one the Sandbox's ``agents.x-k8s.io/pod-name`` annotation names
(the sandbox's own name for an adopted one). We then attach our exec helper to that pod: no router,
no HTTP runtime, so the pool's image needs only sh, coreutils and tar. Deleting the claim deletes
its sandbox and pod (the claim owns them). The pool's pod template is the user's
``SandboxTemplate``: its first container must be named ``sandbox``.
"""

from __future__ import annotations

import time
from typing import Any

from kubernetes import client, watch
from kubernetes.client import ApiException

from praisonai._errors import ConfigError, ProviderUnavailableError, ProvisionError
from praisonai.compute.config import ComputeConfig

CLAIM_GROUP = "extensions.agents.x-k8s.io"
SANDBOX_GROUP = "agents.x-k8s.io"
VERSION = "v1beta1"
CLAIMS = "sandboxclaims"
SANDBOXES = "sandboxes"
POD_NAME_ANNOTATION = "agents.x-k8s.io/pod-name"
#: On the claimed pod: the claim that owns it, so that shutdown from any process deletes the claim.
LABEL_CLAIM = "praisonai.claim"
# The claim's Ready=False reasons the controller never recovers from (its Python client's list).
_TERMINAL = {
    "InvalidMetadata",
    "EnvVarsInjectionRejected",
    "VolumeClaimTemplatesError",
    "ClaimExpired",
    "SandboxExpired",
    "TemplateNotFound",
    "WarmPoolNotFound",
}


def check_installed(api: Any, pool: str) -> None:
    """Raise unless the agent-sandbox API groups are served (API discovery: a 404 on a group is
    "not installed")."""
    custom: Any = client.CustomObjectsApi(api)  # custom objects are plain dicts
    for group in (CLAIM_GROUP, SANDBOX_GROUP):
        try:
            custom.get_api_resources(group, VERSION)
        except ApiException as exc:
            if exc.status == 404:
                raise ConfigError(
                    f"warm pool {pool!r} needs the agent-sandbox CRDs ({group}/{VERSION}), which this "
                    "cluster does not serve; install kubernetes-sigs/agent-sandbox or drop warm_pool",
                    op="provision",
                ) from exc
            raise


def check_config(cfg: ComputeConfig, pool: str) -> None:
    """Refuse what a claimed pod cannot honour: its SandboxTemplate decides image, resources and
    network (its ``networkPolicy``)."""
    fields = [name for name in ("image", "cpu", "memory_mb") if getattr(cfg, name) is not None]
    fields += ["network"] if cfg.network != "unrestricted" else []
    if fields:
        raise ConfigError(
            f"instances of warm pool {pool!r} get {', '.join(fields)} from the pool's SandboxTemplate; "
            "set them there, not in the config",
            op="provision",
        )


def find_claim(api: Any, namespace: str, name: str) -> tuple[bool, str | None]:
    """(whether claim ``name`` exists, its pod once bound); (False, None) without the CRDs."""
    custom: Any = client.CustomObjectsApi(api)  # custom objects are plain dicts
    try:
        claim = custom.get_namespaced_custom_object(CLAIM_GROUP, VERSION, namespace, CLAIMS, name)
    except ApiException as exc:
        if exc.status in (403, 404):  # no CRDs, or no right to read claims: none of ours
            return False, None
        raise
    sandbox = str(((claim.get("status") or {}).get("sandbox") or {}).get("name") or "")
    return True, (pod_of_sandbox(custom, namespace, sandbox) if sandbox else None)


def claim_annotations(api: Any, namespace: str, name: str) -> dict[str, str]:
    """Claim ``name``'s own annotations (the identity we gave it); none once it is gone."""
    custom: Any = client.CustomObjectsApi(api)  # custom objects are plain dicts
    try:
        claim = custom.get_namespaced_custom_object(CLAIM_GROUP, VERSION, namespace, CLAIMS, name)
    except ApiException as exc:
        if exc.status == 404:
            return {}
        raise
    return dict((claim.get("metadata") or {}).get("annotations") or {})


def claimed_pods(api: Any, namespace: str, selector: str) -> list[tuple[str, dict[str, str]]]:
    """(pod, the claim's annotations) of every bound claim matching ``selector``; none without
    the CRDs."""
    custom: Any = client.CustomObjectsApi(api)  # custom objects are plain dicts
    try:
        found = custom.list_namespaced_custom_object(
            CLAIM_GROUP, VERSION, namespace, CLAIMS, label_selector=selector
        )
    except ApiException as exc:
        if exc.status in (403, 404):  # no CRDs, or no right to read claims: none of ours
            return []
        raise
    pods = []
    for claim in found.get("items") or []:
        sandbox = str(((claim.get("status") or {}).get("sandbox") or {}).get("name") or "")
        if sandbox:
            annotations = dict((claim.get("metadata") or {}).get("annotations") or {})
            pods.append((pod_of_sandbox(custom, namespace, sandbox), annotations))
    return pods


def claim_manifest(name: str, pool: str, meta: dict[str, Any], ttl_s: float | None) -> dict[str, Any]:
    """The SandboxClaim: the pool, our identity on the claim and (merged by the controller) on its
    pod; ``ttl_s`` as the claim's shutdown time, the cluster's backstop to our own reaping."""
    spec: dict[str, Any] = {
        "warmPoolRef": {"name": pool},
        # annotations only: the controller refuses pod labels outside its allowed domains
        # (sandbox.users.io by default), so the pod is found through the claim, not by label
        "additionalPodMetadata": {"annotations": meta["annotations"]},
    }
    if ttl_s:
        at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + ttl_s))
        spec["lifecycle"] = {"shutdownTime": at, "shutdownPolicy": "Delete"}
    return {
        "apiVersion": f"{CLAIM_GROUP}/{VERSION}",
        "kind": "SandboxClaim",
        "metadata": {"name": name, "labels": meta["labels"], "annotations": meta["annotations"]},
        "spec": spec,
    }


def until_claimed(api: Any, namespace: str, name: str, pool: str, timeout_s: float) -> str:
    """Watch the claim until it is bound and ``Ready``; the name of its pod then. An empty pool
    (or one whose sandboxes never get ready) is a ``ProvisionError`` after ``timeout_s``."""
    custom: Any = client.CustomObjectsApi(api)  # custom objects are plain dicts
    deadline = time.monotonic() + timeout_s
    why = "no sandbox adopted yet"
    while (left := deadline - time.monotonic()) > 0:
        # the watch helper carries no annotations
        events = watch.Watch().stream(  # type: ignore[no-untyped-call]
            custom.list_namespaced_custom_object,
            CLAIM_GROUP,
            VERSION,
            namespace,
            CLAIMS,
            field_selector=f"metadata.name={name}",
            timeout_seconds=max(1, int(min(left, 30))),
        )
        for event in events:
            if event["type"] == "DELETED":
                raise ProvisionError(f"sandbox claim {name} was deleted while it waited", op="provision")
            sandbox, ready, why = _read_status(event["object"], name)
            if sandbox and ready:
                return pod_of_sandbox(custom, namespace, sandbox)
            if time.monotonic() > deadline:
                break
    raise ProvisionError(
        f"warm pool {pool!r} gave claim {name} no ready sandbox within {timeout_s:g} s ({why}); "
        "the pool is empty or its sandboxes are not ready (ready_timeout_s bounds the wait)",
        op="provision",
    )


def _read_status(claim: dict[str, Any], name: str) -> tuple[str, bool, str]:
    """(sandbox name, Ready, why not ready) of a claim; raises on a reason that will not clear."""
    status = claim.get("status") or {}
    ready, why = False, "no sandbox adopted yet"
    for cond in status.get("conditions") or []:
        if cond.get("type") != "Ready":
            continue
        ready = cond.get("status") == "True"
        if not ready:
            why = f"{cond.get('reason')}: {cond.get('message', '')}"[:200]
            if cond.get("reason") in _TERMINAL:
                raise ProvisionError(f"sandbox claim {name} failed ({why})", op="provision")
    return str((status.get("sandbox") or {}).get("name") or ""), ready, why


def pod_of_sandbox(custom: Any, namespace: str, sandbox: str) -> str:
    """The pod of a Sandbox: its ``agents.x-k8s.io/pod-name`` annotation, else its own name."""
    try:
        found = custom.get_namespaced_custom_object(SANDBOX_GROUP, VERSION, namespace, SANDBOXES, sandbox)
    except ApiException as exc:
        raise ProviderUnavailableError(
            f"could not read sandbox {sandbox}: {exc.reason}", op="provision"
        ) from exc
    annotations = (found.get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(POD_NAME_ANNOTATION) or sandbox)
