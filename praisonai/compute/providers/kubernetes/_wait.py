"""Waiting for a new pod, in two stages with their own limits.

A Pending pod is not a slow start: until the scheduler has placed it, the cluster lacks room (or
a node that fits it), which ``scheduled_s`` bounds; once placed, pulling its image and starting
it is ``ready_s``'s business. A pod that cannot start (bad image, failed, ended) fails at once.
"""

from __future__ import annotations

import time
from typing import Any

from kubernetes import watch

from praisonai._errors import ImageNotFoundError, ProviderUnavailableError, ProvisionError
from praisonai.compute.lifecycle import progress

# Waiting reasons that will not resolve by themselves.
_IMAGE = {"ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName"}
_BROKEN = {"CreateContainerConfigError", "CreateContainerError", "RunContainerError", "CrashLoopBackOff"}


def until_ready(core: Any, namespace: str, name: str, scheduled_s: float, ready_s: float) -> Any:
    """Watch the pod until it runs and its container is ready; the ``V1Pod`` then."""
    start = time.monotonic()
    placed_at: float | None = None
    pod: Any = None
    progress.info(f"pod {name}: waiting for the scheduler to place it")
    while True:
        now = time.monotonic()
        if placed_at is None and now - start > scheduled_s:
            raise ProviderUnavailableError(
                f"pod {name} was not scheduled within {scheduled_s:g} s ({_why_pending(pod)}); "
                "the cluster has no room for it or no node that fits it",
                op="provision",
            )
        if placed_at is not None and now - placed_at > ready_s:
            raise ProvisionError(
                f"pod {name} was scheduled but not ready within {ready_s:g} s "
                f"({_waiting(pod) or 'starting'})",
                op="provision",
            )
        left = (scheduled_s - (now - start)) if placed_at is None else (ready_s - (now - placed_at))
        # the watch helper carries no annotations
        events = watch.Watch().stream(  # type: ignore[no-untyped-call]
            core.list_namespaced_pod,
            namespace,
            field_selector=f"metadata.name={name}",
            timeout_seconds=max(1, int(min(left, 30)) + 1),
        )
        for event in events:
            pod = event["object"]
            if event["type"] == "DELETED":
                raise ProvisionError(f"pod {name} was deleted while it started", op="provision")
            if placed_at is None and _scheduled(pod):
                placed_at = time.monotonic()
                progress.info(f"pod {name}: scheduled on {pod.spec.node_name or 'a node'}, starting")
            if _ready(pod, name):
                return pod
            if time.monotonic() - (placed_at or start) > (ready_s if placed_at else scheduled_s):
                break  # the stage's limit: checked above


def _scheduled(pod: Any) -> bool:
    conditions = pod.status.conditions or []
    return any(c.type == "PodScheduled" and c.status == "True" for c in conditions)


def _ready(pod: Any, name: str) -> bool:
    """True once running and ready; raises when the pod cannot get there."""
    phase = pod.status.phase
    if phase in ("Succeeded", "Failed"):
        raise ProvisionError(
            f"pod {name} ended while it started ({phase}: {pod.status.reason or ''})", op="provision"
        )
    reason = _waiting(pod)
    if reason.split(":")[0] in _IMAGE:
        image = pod.spec.containers[0].image
        raise ImageNotFoundError(f"pod {name} cannot get its image {image} ({reason})", op="provision")
    if reason.split(":")[0] in _BROKEN:
        raise ProvisionError(f"pod {name} cannot start its container ({reason})", op="provision")
    boxes = pod.status.container_statuses or []
    return phase == "Running" and bool(boxes) and all(b.ready for b in boxes)


def _waiting(pod: Any) -> str:
    for box in (pod.status.container_statuses or []) if pod is not None else []:
        waiting = box.state.waiting if box.state else None
        if waiting is not None and waiting.reason:
            return f"{waiting.reason}: {(waiting.message or '')[:200]}"
    return ""


def _why_pending(pod: Any) -> str:
    for c in (pod.status.conditions or []) if pod is not None else []:
        if c.type == "PodScheduled" and c.status != "True":
            return f"{c.reason}: {c.message}"
    return "no scheduling decision yet"
