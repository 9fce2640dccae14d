"""Pause and resume on kubernetes: scale to zero keeping a PersistentVolumeClaim.

An instance provisioned with ``idle_action='pause'`` has its working dir on a claim of its own
(named as its pod, carrying the same identity labels, so list/gc/shutdown find it) instead of an
emptyDir; the claim also keeps the pod's manifest (annotation ``praisonai.pod``: the spec and its
env, readable by whoever may read claims in the namespace, as the pod's own spec is). ``pause``
deletes the pod and keeps the claim; ``resume`` (or the instance's next call) creates the pod
again under the same name from that manifest, mounting the claim. Only the working dir survives:
files elsewhere (/tmp, HOME, the image's root) go with the pod.

When the pod's watchdog exits (idle), the pod ends and stays ``Succeeded`` beside its claim: that
reads as ``PAUSED`` (``_pod.info_of``), and the next resume deletes the ended pod before creating
it again. A resume past the instance's ttl removes it instead, and the recreated pod's
``activeDeadlineSeconds`` is what remains of the ttl: a pause never extends a lifetime.

Provision refuses ``idle_action='pause'`` in one sentence, before anything is created, where the
options name no StorageClass and the cluster has no default one, and on a warm pool (its pods are
the pool's, not ours to make again).
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import time
from typing import TYPE_CHECKING, Any, cast

from kubernetes import client
from kubernetes.utils import parse_quantity

from praisonai._errors import InstanceNotFoundError, PraisonAIError, UnsupportedFeatureError
from praisonai._types import InstanceInfo, InstanceStatus
from praisonai.compute.channel import ChannelMixin
from praisonai.compute.config import ComputeConfig
from praisonai.compute.lifecycle import LABEL_CREATED, LABEL_INSTANCE
from praisonai.compute.providers.kubernetes import _pod
from praisonai.runtime.channel import Channel

if TYPE_CHECKING:
    from praisonai.compute.providers.kubernetes import KubernetesCompute

POD_SPEC = "praisonai.pod"  # the claim's annotation holding the pod's manifest (JSON)
DEFAULT_CLASS = (
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",  # older clusters still set this one
)
_LIVE = ("Pending", "Running")


def check_config(cfg: ComputeConfig, warm_pool: str | None) -> None:
    """Refuse pausing a warm pool's pod: the pool made it, so we cannot make it again."""
    if warm_pool and cfg.lifetime.pauses:
        raise UnsupportedFeatureError(
            f"instances claimed from the warm pool {warm_pool} cannot be paused (their pods are the "
            "pool's, not made again by us); use idle_action='stop', or no warm_pool",
            op="provision",
        )


async def storage_for(k: KubernetesCompute, cfg: ComputeConfig) -> str | None:
    """The StorageClass of a pausing instance's claim (the options', else the cluster's default);
    ``None`` for an instance that does not pause.

    Raises:
        UnsupportedFeatureError: it pauses, the options name no class and the cluster has no default.
    """
    if not cfg.lifetime.pauses:
        return None
    if k.options.storage_class:
        return k.options.storage_class
    found: str | None = await k._read_call("provision", "the storage classes", _default_class, k._client())
    if found is None:
        raise UnsupportedFeatureError(
            "idle_action='pause' keeps the working dir on a PersistentVolumeClaim, but the cluster "
            "has no default StorageClass: name one with KubernetesCompute(storage_class=...), or "
            "use idle_action='stop'",
            op="provision",
        )
    return found


def _default_class(api: Any) -> str | None:
    """The name of the cluster's default StorageClass, or ``None`` (blocking)."""
    classes: Any = client.StorageV1Api(api).list_storage_class()  # the SDK's models: Optional everywhere
    for sc in classes.items:
        annotations = sc.metadata.annotations or {}
        if any(annotations.get(a) == "true" for a in DEFAULT_CLASS):
            return str(sc.metadata.name)
    return None


async def create_claim(k: KubernetesCompute, instance_id: str, pod: dict[str, Any], storage: str) -> None:
    """The instance's claim, carrying the pod's identity and manifest (see the module docstring)."""
    meta = pod["metadata"]
    name, ns = str(meta["name"]), k.namespace
    annotations = {**meta["annotations"], POD_SPEC: json.dumps(pod, separators=(",", ":"))}
    spec = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": k.options.volume_size}},
        "storageClassName": storage,
    }
    body = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "labels": meta["labels"], "annotations": annotations},
        "spec": spec,
    }
    await k._create_or_adopt(
        f"persistent volume claim {name}",
        instance_id,
        functools.partial(k.core.create_namespaced_persistent_volume_claim, ns, body),
        functools.partial(k.core.read_namespaced_persistent_volume_claim, name, ns),
    )


async def read_claim(k: KubernetesCompute, instance_id: str, op: str) -> Any | None:
    """The instance's claim (a ``V1PersistentVolumeClaim``), or ``None`` when it has none."""
    name = _pod.pod_name(instance_id)
    with contextlib.suppress(InstanceNotFoundError):
        read = k.core.read_namespaced_persistent_volume_claim
        return await k._read_call(op, f"persistent volume claim {name}", read, name, k.namespace)
    return None


async def _read_pod(k: KubernetesCompute, name: str, op: str) -> Any | None:
    with contextlib.suppress(InstanceNotFoundError):
        return await k._read_call(op, f"pod {name}", k.core.read_namespaced_pod, name, k.namespace)
    return None


async def _delete_pod(k: KubernetesCompute, name: str, op: str) -> None:
    """Delete the pod at once (no grace: its processes end as a pause says); gone already is fine."""
    options = client.V1DeleteOptions(grace_period_seconds=0)
    with contextlib.suppress(InstanceNotFoundError):
        await k._write_call(op, f"pod {name}", k.core.delete_namespaced_pod, name, k.namespace, body=options)


async def delete_claim(k: KubernetesCompute, instance_id: str) -> bool:
    """Delete the instance's claim (its files go with it); whether it had one. Read first: most
    instances have none, and a read spends none of the writes' rate limit."""
    name = _pod.pod_name(instance_id)
    delete = k.core.delete_namespaced_persistent_volume_claim
    if await read_claim(k, instance_id, "shutdown") is None:
        return False
    try:
        await k._write_call("shutdown", f"persistent volume claim {name}", delete, name, k.namespace)
    except InstanceNotFoundError:
        return False
    return True


def claim_info(claim: Any) -> InstanceInfo:
    """A paused instance, read from its claim (its pod is gone)."""
    meta = claim.metadata
    annotations = dict(meta.annotations or {})
    return InstanceInfo(
        instance_id=annotations.get(LABEL_INSTANCE, meta.name),
        provider="kubernetes",
        status=InstanceStatus.PAUSED,
        endpoint=f"kubernetes://{meta.namespace}/{meta.name}",
        created_at=float(annotations.get(LABEL_CREATED, 0)),
        labels={k: v for k, v in annotations.items() if k not in (_pod.LABEL_WORKDIR, POD_SPEC)},
        metadata={
            "pod": meta.name,
            "namespace": meta.namespace,
            "phase": "Paused",
            "working_dir": annotations.get(_pod.LABEL_WORKDIR, "/"),
            "claim": meta.name,
            "node": None,
        },
    )


async def paused_info(k: KubernetesCompute, instance_id: str) -> InstanceInfo:
    """The instance as its claim shows it, for one without a pod.

    Raises:
        InstanceNotFoundError: it has no claim either.
    """
    claim = await read_claim(k, instance_id, "status")
    if claim is None:
        raise InstanceNotFoundError(
            f"pod {_pod.pod_name(instance_id)} does not exist in the cluster", op="status"
        )
    return claim_info(claim)


async def paused_infos(k: KubernetesCompute, selector: str) -> list[InstanceInfo]:
    """Every claim of ours (``selector``) as a paused instance; the caller prefers a live pod's."""
    list_ = k.core.list_namespaced_persistent_volume_claim
    found = await k._read_call("list", "the claims", list_, k.namespace, label_selector=selector)
    return [claim_info(c) for c in found.items]


async def pause(k: KubernetesCompute, instance_id: str) -> InstanceInfo:
    """Delete the pod, keep the claim (see the module docstring). Idempotent.

    Raises:
        UnsupportedFeatureError: the instance has no claim (it was not made to pause).
        InstanceNotFoundError: no such instance.
    """
    claim = await read_claim(k, instance_id, "pause")
    if claim is None:
        await k._status(instance_id)  # none at all: not found, said as such
        raise UnsupportedFeatureError(
            f"kubernetes instance {instance_id} keeps its working dir in its pod only, so it cannot "
            "be paused; provision it with idle_action='pause' (environment.yaml: idle_action: pause)",
            op="pause",
        )
    k._channels.drop(instance_id)
    k._pods.pop(instance_id, None)
    await _delete_pod(k, claim.metadata.name, "pause")
    await k.egress.sweep("pause")  # its egress proxy, if it was the last one behind it (made again on resume)
    return claim_info(claim)


async def resume(k: KubernetesCompute, instance_id: str) -> InstanceInfo:
    """Create the pod again from its claim's manifest and wait until it is ready. A running
    instance is returned as it is; one past its ttl is removed instead.

    Raises:
        InstanceNotFoundError: no such instance, or it was past its ttl (and is removed now).
    """
    claim = await read_claim(k, instance_id, "resume")
    if claim is None:  # not a pausing instance: as it is (or not found)
        return await k._status(instance_id)
    name = str(claim.metadata.name)
    pod = await _read_pod(k, name, "resume")
    if pod is not None and pod.status.phase in _LIVE:
        return _pod.info_of(pod)
    body, now = json.loads((claim.metadata.annotations or {})[POD_SPEC]), time.time()
    if why := past_ttl(body, now):
        await k.shutdown(instance_id)
        raise InstanceNotFoundError(
            f"kubernetes instance {instance_id} was {why}: removed, not resumed", op="resume"
        )
    k._channels.drop(instance_id)
    if pod is not None:  # ended by its watchdog: made again under the same name
        await _delete_pod(k, name, "resume")
    return await k._run_pod(
        instance_id, with_deadline(body, now), str(body["spec"]["containers"][0]["workingDir"])
    )


def past_ttl(body: dict[str, Any], now: float) -> str | None:
    """Why the instance of pod manifest ``body`` is past its ttl (its ``activeDeadlineSeconds``,
    from its creation annotation), or ``None``."""
    ttl = body["spec"].get("activeDeadlineSeconds")
    created = str(body["metadata"]["annotations"].get(LABEL_CREATED, ""))
    if not (isinstance(ttl, int) and ttl > 0 and created.isdigit()):
        return None
    age = now - int(created)
    return f"{age:.0f}s old (ttl_s={ttl})" if age >= ttl else None


def with_deadline(body: dict[str, Any], now: float) -> dict[str, Any]:
    """``body`` whose ``activeDeadlineSeconds`` is what remains of the instance's ttl."""
    ttl = body["spec"].get("activeDeadlineSeconds")
    created = str(body["metadata"]["annotations"].get(LABEL_CREATED, ""))
    if isinstance(ttl, int) and created.isdigit():
        body["spec"]["activeDeadlineSeconds"] = max(1, math.ceil(ttl - (now - int(created))))
    return body


async def disk(k: KubernetesCompute, instance_id: str) -> int | None:
    """The claim's capacity in bytes (what the cluster keeps for it, whatever is written)."""
    claim = await read_claim(k, instance_id, "measure")
    status, spec = (claim.status, claim.spec) if claim is not None else (None, None)
    size = ((status.capacity if status else None) or {}).get("storage") or (
        ((spec.resources.requests if spec and spec.resources else None) or {}).get("storage")
    )
    return int(parse_quantity(size)) if size else None  # type: ignore[no-untyped-call]  # no annotations


async def is_paused(k: KubernetesCompute, instance_id: str) -> bool:
    """Whether the instance has its claim and no live pod."""
    claim = await read_claim(k, instance_id, "exec")
    if claim is None:
        return False
    pod = await _read_pod(k, str(claim.metadata.name), "exec")
    return pod is None or pod.status.phase not in _LIVE


class PauseMixin(ChannelMixin):
    """``KubernetesCompute``'s pause hooks (``abilities.pause``), and its channels that wake a
    paused instance: a call on one (or ``Sandbox.connect``) resumes it, once."""

    def _k8s(self) -> KubernetesCompute:
        return cast("KubernetesCompute", self)

    async def _pause(self, instance_id: str) -> InstanceInfo:
        return await pause(self._k8s(), instance_id)

    async def _resume(self, instance_id: str) -> InstanceInfo:
        return await resume(self._k8s(), instance_id)

    async def _paused_disk(self, instance_id: str) -> int | None:
        return await disk(self._k8s(), instance_id)

    async def _open_channel(self, instance_id: str) -> Channel:
        """The channel; when it cannot open because the instance is paused, resume it (the
        ledger's state kept) and open once more. Two callers at once both resume: the second
        finds the pod running (or adopts the one the first created)."""
        try:
            return await super()._open_channel(instance_id)
        except PraisonAIError:  # no pod (404) or an ended one (a refused exec): paused, or gone
            if not await is_paused(self._k8s(), instance_id):
                raise
        await self.resume(instance_id)
        return await super()._open_channel(instance_id)


__all__ = ["POD_SPEC", "PauseMixin", "check_config", "create_claim", "delete_claim", "storage_for"]
