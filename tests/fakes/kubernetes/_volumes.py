"""The Kubernetes fake's storage: PersistentVolumeClaims, each a local docker volume that a pod's
``persistentVolumeClaim`` volume mounts (a copy of a VolumeSnapshot's, with that ``dataSource``:
``_snapshots``), and StorageClasses (one, ``standard``, the cluster's default unless
``fake.default_storage_class`` is False).

A claim is ``Bound`` at once (no provisioner, no binding modes); deleting it removes its docker
volume (its pods were deleted first by our callers; a volume still in use is left to ``close``).
Every volume carries the fake's owner label, so ``close`` removes what the fake made."""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any

from fakes import docker
from fakes.kubernetes import _snapshots
from fakes.kubernetes._pods import OWNER_LABEL

if TYPE_CHECKING:
    from fakes.kubernetes import KubernetesFake

STORAGE = ["apis", "storage.k8s.io", "v1"]
DEFAULT_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
CLASS_NAME = "standard"


def volume_name(fake_id: str, ns: str, name: str) -> str:
    return f"k8s-fake-{fake_id}-{ns}-{name}"


def leftovers(fake_id: str) -> list[str]:
    """The docker volumes a fake made that still exist."""
    found = docker.docker("volume", "ls", "-q", "--filter", f"label={OWNER_LABEL}={fake_id}")
    return found.stdout.decode().split()


def remove(*volumes: str) -> None:
    if volumes:
        docker.docker("volume", "rm", "-f", *volumes)


def storage_classes(fake: KubernetesFake, name: str | None) -> tuple[int, Any]:
    """The StorageClassList (``name`` None), or the class ``name``: ``standard``, annotated
    default while ``fake.default_storage_class``."""
    default = "true" if fake.default_storage_class else "false"
    meta = {"name": CLASS_NAME, "annotations": {DEFAULT_ANNOTATION: default}, "resourceVersion": "1"}
    item = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": meta}
    item |= {"provisioner": _snapshots.DRIVER, "reclaimPolicy": "Delete"}
    if name is not None:
        return (
            (200, item) if name == CLASS_NAME else (404, ("NotFound", f'storageclasses "{name}" not found'))
        )
    return 200, {
        "kind": "StorageClassList",
        "apiVersion": "storage.k8s.io/v1",
        "metadata": {},
        "items": [item],
    }


def create_claim(fake: KubernetesFake, ns: str, claim: dict[str, Any]) -> tuple[int, Any]:
    meta = claim.setdefault("metadata", {})
    name = str(meta.get("name") or "")
    if not name:
        return 422, ("Invalid", "PersistentVolumeClaim is invalid: metadata.name is required")
    with fake.cond:
        if (ns, name) in fake.claims:
            return 409, ("AlreadyExists", f'persistentvolumeclaims "{name}" already exists')
    volume = volume_name(fake.fake_id, ns, name)
    made = docker.docker("volume", "create", "--label", f"{OWNER_LABEL}={fake.fake_id}", volume)
    if made.returncode != 0:
        return 500, ("InternalError", made.stderr.decode(errors="replace").strip())
    source = (claim.get("spec") or {}).get("dataSource") or {}
    if source.get("kind") == "VolumeSnapshot":  # the provisioner's copy of a ready snapshot
        snapshot = _snapshots.volume_of(fake, ns, str(source.get("name")))
        if snapshot is None or not _snapshots.copy_volume(snapshot, volume):
            remove(volume)
            return 422, (
                "Invalid",
                f"PersistentVolumeClaim {name} is invalid: no ready VolumeSnapshot {source}",
            )
    with fake.cond:
        meta.update(namespace=ns, uid=str(uuid.uuid4()), creationTimestamp=_iso(time.time()))
        claim["spec"] = {**(claim.get("spec") or {}), "volumeName": f"pvc-{meta['uid']}"}
        requested = ((claim["spec"].get("resources") or {}).get("requests") or {}).get("storage", "1Gi")
        claim["status"] = {
            "phase": "Bound",
            "capacity": {"storage": requested},
            "accessModes": ["ReadWriteOnce"],
        }
        claim["_volume"] = volume
        fake.claims[(ns, name)] = claim
        fake.version += 1
        meta["resourceVersion"] = str(fake.version)
    return 201, claim


def delete_claim(fake: KubernetesFake, ns: str, name: str) -> tuple[int, Any]:
    with fake.cond:
        claim = fake.claims.pop((ns, name), None)
    if claim is None:
        return 404, ("NotFound", f'persistentvolumeclaims "{name}" not found')
    remove(claim["_volume"])
    return 200, claim


def volume_of(fake: KubernetesFake, ns: str, claim_name: str) -> str | None:
    """The docker volume behind claim ``claim_name`` of ``ns``, or None when there is no such claim."""
    with fake.cond:
        claim = fake.claims.get((ns, claim_name))
        return None if claim is None else str(claim["_volume"])


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
