"""The instance's Pod and NetworkPolicy as API bodies, and a Pod read back as an InstanceInfo.

Labels carry what Kubernetes allows in a label value (so listing by selector works from any
process); annotations carry every identity value (the owner tag has ``@`` and ``:``)."""

from __future__ import annotations

import ipaddress
import math
import re
from typing import Any

from praisonai._types import InstanceInfo, InstanceStatus
from praisonai.compute.config import ComputeConfig, NetworkAllow
from praisonai.compute.lifecycle import LABEL_CREATED, LABEL_IDLE_ACTION, LABEL_INSTANCE, LABEL_PROVIDER
from praisonai.compute.separation import COMMAND_UID, command_user, labelled, root_capabilities

LABEL_WORKDIR = "praisonai.workdir"
_LABEL_VALUE = re.compile(r"([A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?)?\Z")
_PHASES = {
    "Pending": InstanceStatus.PROVISIONING,
    "Running": InstanceStatus.RUNNING,
    "Succeeded": InstanceStatus.STOPPED,  # the watchdog ended it: idle, or past its ttl
    "Failed": InstanceStatus.ERROR,
}


def pod_name(instance_id: str) -> str:
    """A DNS-1123 name for the instance (its ids have ``_``, which pod names may not)."""
    return instance_id.replace("_", "-").lower()


def manifest(
    instance_id: str,
    cfg: ComputeConfig,
    labels: dict[str, str],
    command: list[str],
    opts: Any,
    claim: str | None = None,
) -> dict[str, Any]:
    """The Pod: our identity, resources, no service account token, a read-only root (writable
    emptyDirs at the working dir, /tmp and HOME), never restarted, ``ttl_s`` as its active
    deadline (a backstop to the in-pod watchdog). With ``claim``, the working dir is that
    PersistentVolumeClaim instead (a pausing instance's, ``_pause``), read-only root or not. Who
    runs what: :func:`security`."""
    limits: dict[str, str] = {
        "cpu": _cpu(cfg.cpu or opts.cpu),
        "memory": f"{cfg.memory_mb or opts.memory_mb}Mi",
    }
    box: dict[str, Any] = {
        "name": "sandbox",
        "image": cfg.image or opts.image,
        "command": command,
        "env": [{"name": k, "value": v} for k, v in cfg.env.items()],
        "workingDir": cfg.working_dir,
        "resources": {"requests": dict(limits), "limits": limits},
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": opts.read_only_root,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": _mounts(cfg, opts, claim),
    }
    pod_security, box["securityContext"]["capabilities"] = security(cfg, opts.run_as_user)
    spec: dict[str, Any] = {
        "containers": [box],
        "restartPolicy": "Never",
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,  # no other services' addresses in the sandbox's env
        "shareProcessNamespace": True,  # the pause process is PID 1 and reaps orphans
        "terminationGracePeriodSeconds": 1,
        "volumes": [_volume(m["name"], claim) for m in box["volumeMounts"]],
        "securityContext": pod_security,
    }
    if opts.runtime_class:
        spec["runtimeClassName"] = opts.runtime_class
    if cfg.lifetime.ttl_s:
        spec["activeDeadlineSeconds"] = math.ceil(cfg.lifetime.ttl_s)
    meta = {"name": pod_name(instance_id), **identity(labelled(labels, command_user(cfg)), cfg.working_dir)}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def security(cfg: ComputeConfig, run_as_user: int | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The pod's ``securityContext`` and its container's ``capabilities``. Without ``run_as_user``
    the pod runs as root, keeping only docker's capabilities for root (``root_capabilities``),
    and its commands (``command_user``) run as uid 1000 with none, which may write the volumes
    (``fsGroup``); with it, the whole pod runs as that uid with no capability at all."""
    if run_as_user is not None:
        ids = {"runAsUser": run_as_user, "runAsGroup": run_as_user, "fsGroup": run_as_user}
        return {"runAsNonRoot": run_as_user != 0, **ids}, {"drop": ["ALL"]}
    ids = {"runAsUser": 0, "runAsGroup": 0}
    if command_user(cfg):
        ids["fsGroup"] = COMMAND_UID
    return ids, {"drop": ["ALL"], "add": root_capabilities(cfg)}


def identity(labels: dict[str, str], working_dir: str, more: dict[str, str] | None = None) -> dict[str, Any]:
    """``labels`` and ``annotations`` of an instance's objects: every identity value (and the
    working dir, and ``more``) in annotations, the values Kubernetes allows in labels too."""
    shown = {k: v for k, v in labels.items() if _LABEL_VALUE.match(v) and len(k) <= 253}
    return {"labels": shown, "annotations": {**labels, LABEL_WORKDIR: working_dir, **(more or {})}}


_KEPT = "work"  # the mount of the claim that keeps a pausing instance's working dir


def _mounts(cfg: ComputeConfig, opts: Any, claim: str | None) -> list[dict[str, str]]:
    writable = [cfg.working_dir, "/tmp", "/home/sandbox"] if opts.read_only_root else []
    paths = dict.fromkeys(([cfg.working_dir] if claim else []) + writable)  # in order, no duplicates
    return [
        {"name": _KEPT if claim and p == cfg.working_dir else f"rw{i}", "mountPath": p}
        for i, p in enumerate(paths)
    ]


def _volume(name: str, claim: str | None) -> dict[str, Any]:
    if name == _KEPT:
        return {"name": name, "persistentVolumeClaim": {"claimName": claim}}
    return {"name": name, "emptyDir": {}}


def _cpu(cpu: float) -> str:
    return f"{max(1, round(cpu * 1000))}m"


def network_policy(instance_id: str, network: object) -> dict[str, Any] | None:
    """The NetworkPolicy for the instance's network: ``none`` denies all ingress and egress; an
    allowlist allows DNS and the listed entries that are IP blocks (NetworkPolicy has no host
    names); ``unrestricted`` needs none. ``None`` when none is needed."""
    if network == "unrestricted":
        return None
    selector = {"matchLabels": {LABEL_INSTANCE: instance_id}}
    spec: dict[str, Any] = {"podSelector": selector, "policyTypes": ["Ingress", "Egress"], "ingress": []}
    if isinstance(network, NetworkAllow):
        dns = {"ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}
        blocks = [{"ipBlock": {"cidr": a if "/" in a else f"{a}/32"}} for a in network.allow if is_ip(a)]
        spec["egress"] = [dns] + ([{"to": blocks}] if blocks else [])
    labels = {LABEL_INSTANCE: instance_id, LABEL_PROVIDER: "kubernetes"}
    meta = {"name": pod_name(instance_id), "labels": labels}
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": meta, "spec": spec}


def is_ip(text: str) -> bool:
    """An IP address or block as a NetworkPolicy's ``ipBlock`` takes it (dotted quad or IPv6,
    ``/n`` optional); other spellings of an address are left to the proxy's check, which refuses them."""
    try:
        ipaddress.ip_network(text, strict=False)
    except ValueError:
        return False
    return True


def info_of(pod: Any) -> InstanceInfo:
    """An InstanceInfo from a ``V1Pod``; the annotations hold our identity. A pausing instance's
    pod that its watchdog ended (idle) is ``PAUSED``: its claim keeps the working dir (``_pause``)."""
    meta, status = pod.metadata, pod.status
    annotations = dict(meta.annotations or {})
    phase = str(getattr(status, "phase", None) or "Pending")
    state = _PHASES.get(phase, InstanceStatus.ERROR)
    if state is InstanceStatus.STOPPED and annotations.get(LABEL_IDLE_ACTION) == "pause":
        state = InstanceStatus.PAUSED
    return InstanceInfo(
        instance_id=annotations.get(LABEL_INSTANCE, meta.name),
        provider="kubernetes",
        status=state,
        endpoint=f"kubernetes://{meta.namespace}/{meta.name}",
        created_at=float(annotations.get(LABEL_CREATED, 0)),
        labels={k: v for k, v in annotations.items() if k != LABEL_WORKDIR},
        metadata={
            "pod": meta.name,
            "namespace": meta.namespace,
            "phase": phase,
            "working_dir": annotations.get(LABEL_WORKDIR, "/"),
            "node": pod.spec.node_name,
        },
    )
