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
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any, TypeVar

from kubernetes import client
from kubernetes.utils import parse_quantity

from praisonai._errors import InstanceNotFoundError, PraisonAIError, UnsupportedFeatureError
from praisonai._types import InstanceInfo, InstanceStatus
from praisonai.compute.config import ComputeConfig
from praisonai.compute.lifecycle import LABEL_CREATED, LABEL_INSTANCE
from praisonai.compute.providers.kubernetes import _adopt, _pod
from praisonai.compute.providers.kubernetes._api import WriteLimiter, read_call, write_call
from praisonai.compute.providers.kubernetes._options import KubernetesOptions
from praisonai.runtime.pool import ChannelPool

T = TypeVar("T")

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


@dataclass(frozen=True)
class Volumes:
    """The instances' PersistentVolumeClaims in the provider's namespace, and the pods that mount
    them, from the provider's narrow parts: ``core`` (the client's ``CoreV1Api``, connected on
    first use), its ``namespace``, its rate limit on API writes and its options (the StorageClass,
    the claim's size)."""

    core: Callable[[], Any]
    namespace: Callable[[], str]
    writes: WriteLimiter
    options: KubernetesOptions

    async def storage_for(self, cfg: ComputeConfig) -> str | None:
        """The StorageClass of a pausing instance's claim (``storage_class``); ``None`` for an
        instance that does not pause."""
        if not cfg.lifetime.pauses:
            return None
        keeps = "idle_action='pause' keeps the working dir"
        return await self.storage_class("provision", keeps, ", or use idle_action='stop'")

    async def storage_class(self, op: str, keeps: str, instead: str = "") -> str:
        """The options' StorageClass, else the cluster's default one.

        Raises:
            UnsupportedFeatureError: there is neither; the sentence says what ``keeps`` a claim
            and what to do (``instead``, as a clause to add).
        """
        if self.options.storage_class:
            return self.options.storage_class
        api = self.core().api_client
        found: str | None = await read_call(op, "the storage classes", _default_class, api)
        if found is None:
            raise UnsupportedFeatureError(
                f"{keeps} on a PersistentVolumeClaim, but the cluster has no default StorageClass: "
                f"name one with KubernetesCompute(storage_class=...){instead}",
                op=op,
            )
        return found

    async def create(
        self, instance_id: str, pod: dict[str, Any], storage: str, source: Any | None = None
    ) -> None:
        """The instance's claim, carrying the pod's identity and manifest (see the module
        docstring); with ``source`` (a ``_volumes.Source``), its data and size are a VolumeSnapshot's."""
        meta = pod["metadata"]
        name, ns, core = str(meta["name"]), self.namespace(), self.core()
        annotations = {**meta["annotations"], POD_SPEC: json.dumps(pod, separators=(",", ":"))}
        spec = {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": source.size if source else self.options.volume_size}},
            "storageClassName": storage,
        }
        if source is not None:
            spec["dataSource"] = source.data_source
        body = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "labels": meta["labels"], "annotations": annotations},
            "spec": spec,
        }
        await _adopt.create_or_adopt_calls(
            self.writes,
            f"persistent volume claim {name}",
            instance_id,
            "kubernetes",
            functools.partial(core.create_namespaced_persistent_volume_claim, ns, body),
            functools.partial(core.read_namespaced_persistent_volume_claim, name, ns),
        )

    async def find(self, instance_id: str, op: str) -> Any | None:
        """The instance's claim (a ``V1PersistentVolumeClaim``), or ``None`` when it has none."""
        name = _pod.pod_name(instance_id)
        with contextlib.suppress(InstanceNotFoundError):
            read = self.core().read_namespaced_persistent_volume_claim
            return await read_call(op, f"persistent volume claim {name}", read, name, self.namespace())
        return None

    async def delete(self, instance_id: str) -> bool:
        """Delete the instance's claim (its files go with it); whether it had one. Read first: most
        instances have none, and a read spends none of the writes' rate limit."""
        name = _pod.pod_name(instance_id)
        if await self.find(instance_id, "shutdown") is None:
            return False
        delete = self.core().delete_namespaced_persistent_volume_claim
        try:
            what = f"persistent volume claim {name}"
            await write_call(self.writes, "shutdown", what, delete, name, self.namespace())
        except InstanceNotFoundError:
            return False
        return True

    async def paused_info(self, instance_id: str) -> InstanceInfo:
        """The instance as its claim shows it, for one without a pod.

        Raises:
            InstanceNotFoundError: it has no claim either.
        """
        claim = await self.find(instance_id, "status")
        if claim is None:
            raise InstanceNotFoundError(
                f"pod {_pod.pod_name(instance_id)} does not exist in the cluster", op="status"
            )
        return claim_info(claim)

    async def paused_infos(self, selector: str) -> list[InstanceInfo]:
        """Every claim of ours (``selector``) as a paused instance; the caller prefers a live pod's."""
        list_ = self.core().list_namespaced_persistent_volume_claim
        found = await read_call("list", "the claims", list_, self.namespace(), label_selector=selector)
        return [claim_info(c) for c in found.items]

    async def read_pod(self, name: str, op: str) -> Any | None:
        with contextlib.suppress(InstanceNotFoundError):
            return await read_call(op, f"pod {name}", self.core().read_namespaced_pod, name, self.namespace())
        return None

    async def delete_pod(self, name: str, op: str) -> None:
        """Delete the pod at once (no grace: its processes end as a pause says); gone already is fine."""
        options = client.V1DeleteOptions(grace_period_seconds=0)
        delete = self.core().delete_namespaced_pod
        with contextlib.suppress(InstanceNotFoundError):
            await write_call(self.writes, op, f"pod {name}", delete, name, self.namespace(), body=options)


def _default_class(api: Any) -> str | None:
    """The name of the cluster's default StorageClass, or ``None`` (blocking)."""
    classes: Any = client.StorageV1Api(api).list_storage_class()  # the SDK's models: Optional everywhere
    for sc in classes.items:
        annotations = sc.metadata.annotations or {}
        if any(annotations.get(a) == "true" for a in DEFAULT_CLASS):
            return str(sc.metadata.name)
    return None


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


@dataclass(frozen=True)
class KubernetesPauser:
    """``KubernetesCompute``'s pauser (``abilities.pause.Pauser``): the instances' ``volumes``, and
    of the provider: its ``channels`` and ``pods`` (instance id -> pod name, forgotten on a pause),
    its ``status``, ``run_pod`` (create a pod and wait until ready), ``shutdown``, and ``sweep``
    (remove an egress proxy no instance is behind any more)."""

    volumes: Volumes
    channels: ChannelPool
    pods: MutableMapping[str, str]
    status: Callable[[str], Awaitable[InstanceInfo]]
    run_pod: Callable[[str, dict[str, Any], str], Awaitable[InstanceInfo]]
    shutdown: Callable[[str], Awaitable[object]]
    sweep: Callable[[str], Awaitable[object]]

    async def pause(self, instance_id: str) -> InstanceInfo:
        """Delete the pod, keep the claim (see the module docstring). Idempotent.

        Raises:
            UnsupportedFeatureError: the instance has no claim (it was not made to pause).
            InstanceNotFoundError: no such instance.
        """
        claim = await self.volumes.find(instance_id, "pause")
        if claim is None:
            await self.status(instance_id)  # none at all: not found, said as such
            raise UnsupportedFeatureError(
                f"kubernetes instance {instance_id} keeps its working dir in its pod only, so it cannot "
                "be paused; provision it with idle_action='pause' (environment.yaml: idle_action: pause)",
                op="pause",
            )
        self.channels.drop(instance_id)
        self.pods.pop(instance_id, None)
        await self.volumes.delete_pod(claim.metadata.name, "pause")
        await self.sweep("pause")  # its egress proxy, if it was the last one behind it (made again on resume)
        return claim_info(claim)

    async def resume(self, instance_id: str) -> InstanceInfo:
        """Create the pod again from its claim's manifest and wait until it is ready. A running
        instance is returned as it is; one past its ttl is removed instead.

        Raises:
            InstanceNotFoundError: no such instance, or it was past its ttl (and is removed now).
        """
        claim = await self.volumes.find(instance_id, "resume")
        if claim is None:  # not a pausing instance: as it is (or not found)
            return await self.status(instance_id)
        name = str(claim.metadata.name)
        pod = await self.volumes.read_pod(name, "resume")
        if pod is not None and pod.status.phase in _LIVE:
            return _pod.info_of(pod)
        body, now = json.loads((claim.metadata.annotations or {})[POD_SPEC]), time.time()
        if why := past_ttl(body, now):
            await self.shutdown(instance_id)
            raise InstanceNotFoundError(
                f"kubernetes instance {instance_id} was {why}: removed, not resumed", op="resume"
            )
        self.channels.drop(instance_id)
        if pod is not None:  # ended by its watchdog: made again under the same name
            await self.volumes.delete_pod(name, "resume")
        working_dir = str(body["spec"]["containers"][0]["workingDir"])
        return await self.run_pod(instance_id, with_deadline(body, now), working_dir)

    async def paused_disk(self, instance_id: str) -> int | None:
        """The claim's capacity in bytes (what the cluster keeps for it, whatever is written)."""
        claim = await self.volumes.find(instance_id, "measure")
        status, spec = (claim.status, claim.spec) if claim is not None else (None, None)
        size = ((status.capacity if status else None) or {}).get("storage") or (
            ((spec.resources.requests if spec and spec.resources else None) or {}).get("storage")
        )
        return int(parse_quantity(size)) if size else None  # type: ignore[no-untyped-call]  # no annotations

    async def is_paused(self, instance_id: str) -> bool:
        """Whether the instance has its claim and no live pod."""
        claim = await self.volumes.find(instance_id, "exec")
        if claim is None:
            return False
        pod = await self.volumes.read_pod(str(claim.metadata.name), "exec")
        return pod is None or pod.status.phase not in _LIVE

    async def waking(
        self,
        instance_id: str,
        use: Callable[[str], Awaitable[T]],
        resume: Callable[[str], Awaitable[object]],
    ) -> T:
        """``use(instance_id)`` (opening a channel); when it fails because the instance is paused,
        ``resume`` it (the provider's public ``resume``: the ledger's state kept) and use it once
        more. Two callers at once both resume: the second finds the pod running (or adopts the
        one the first created)."""
        try:
            return await use(instance_id)
        except PraisonAIError:  # no pod (404) or an ended one (a refused exec): paused, or gone
            if not await self.is_paused(instance_id):
                raise
        await resume(instance_id)
        return await use(instance_id)


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


__all__ = ["POD_SPEC", "KubernetesPauser", "Volumes", "check_config"]
