"""The fake's CSI volume snapshots: the external-snapshotter's ``snapshot.storage.k8s.io/v1`` CRDs,
served only with ``fake.volume_snapshots`` (404 as a whole otherwise, as a cluster without them;
403 as a whole with ``fake.volume_snapshots_forbidden``, as RBAC answers a role without them).

- VolumeSnapshotClasses (cluster-scoped, list and get): one, ``csi-snapclass``, of the fake
  StorageClass's driver (its provisioner), annotated the default one.
- VolumeSnapshots (namespaced: create, get, list by ``labelSelector``, delete): a create copies
  the source claim (``spec.source.persistentVolumeClaimName``) at once into a docker volume of
  its own, then reports ``status.readyToUse`` True, ``restoreSize`` (the claim's request) and a
  ``boundVolumeSnapshotContentName``, as the snapshot controller does once the CSI driver
  answered; with no such claim it stays not ready with ``status.error``, as the controller
  reports. Deleting one removes its volume (``deletionPolicy: Delete``).
- A claim whose ``spec.dataSource`` names a ready VolumeSnapshot of its namespace starts as a copy
  of it (``_volumes.create_claim``).

Not modelled: VolumeSnapshotContents as objects, pre-provisioned snapshots, ``Retain``, groups,
update/patch and watch. The copy is ``cp -a`` in a container of ``fakes.docker.IMAGE`` (the fake
pulls nothing), not a storage system's copy-on-write.
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any

from fakes import docker
from fakes.kubernetes._pods import OWNER_LABEL

if TYPE_CHECKING:
    from fakes.kubernetes import KubernetesFake

GROUP, VERSION = "snapshot.storage.k8s.io", "v1"
API = ["apis", GROUP, VERSION]
SNAPSHOTS, CLASSES = "volumesnapshots", "volumesnapshotclasses"
CLASS_NAME = "csi-snapclass"
DEFAULT_ANNOTATION = "snapshot.storage.kubernetes.io/is-default-class"
DRIVER = "praisonai.test/docker-volume"  # the fake StorageClass's provisioner (``_volumes``)
_NOT_FOUND = (404, ("NotFound", "the server could not find the requested resource"))


def route(fake: KubernetesFake, method: str, path: list[str], body: Any) -> tuple[int, Any] | None:
    """The group's answer, or ``None`` for a list (the routes' generic one, from ``store``)."""
    if not fake.volume_snapshots:
        return _NOT_FOUND
    if fake.volume_snapshots_forbidden:  # as RBAC answers a role without the group's resources
        return 403, ("Forbidden", f'cannot access resource "{path[-1]}" in API group "{GROUP}"')
    if method == "GET" and path == API:
        return 200, _discovery()
    if path == [*API, CLASSES] and method == "GET":
        return 200, {
            "kind": "VolumeSnapshotClassList",
            "apiVersion": f"{GROUP}/{VERSION}",
            "items": [_class()],
        }
    if path[:4] == [*API, CLASSES] and len(path) == 5 and method == "GET":
        found = path[4] == CLASS_NAME
        return (200, _class()) if found else (404, ("NotFound", f'{CLASSES}.{GROUP} "{path[4]}" not found'))
    if len(path) in (6, 7) and path[3] == "namespaces" and path[5] == SNAPSHOTS:
        if len(path) == 6 and method == "GET":
            return None
        return _objects(fake, method, path[4], path[6] if len(path) == 7 else None, body)
    return _NOT_FOUND


def store(fake: KubernetesFake) -> dict[tuple[str, str], dict[str, Any]]:
    """The VolumeSnapshots by (namespace, name), for the routes' generic list."""
    with fake.cond:
        return {(ns, name): o for (p, ns, name), o in fake.custom.items() if p == SNAPSHOTS}


def volume_of(fake: KubernetesFake, ns: str, name: str) -> str | None:
    """The docker volume of a ready VolumeSnapshot, or ``None``."""
    with fake.cond:
        found = fake.custom.get((SNAPSHOTS, ns, name))
        ready = found is not None and (found.get("status") or {}).get("readyToUse")
        return str(found["_volume"]) if ready and found is not None else None


def copy_volume(source: str, target: str) -> bool:
    """Copy docker volume ``source`` into ``target`` (files, owners, modes, links)."""
    mounts = ["-v", f"{source}:/from:ro", "-v", f"{target}:/to"]
    argv = ["run", "--rm", "--pull", "never", "--network", "none", "--user", "0", *mounts, docker.IMAGE]
    return docker.docker(*argv, "cp", "-a", "/from/.", "/to/").returncode == 0


def _objects(fake: KubernetesFake, method: str, ns: str, name: str | None, body: Any) -> tuple[int, Any]:
    if name is None and method == "POST":
        return _create(fake, ns, dict(body or {}))
    with fake.cond:
        found = fake.custom.get((SNAPSHOTS, ns, str(name)))
        if found is None:
            return 404, ("NotFound", f'{SNAPSHOTS}.{GROUP} "{name}" not found')
        if method == "GET":
            return 200, found
        if method != "DELETE":
            return 405, ("MethodNotAllowed", f"{method} is not supported here")
        del fake.custom[(SNAPSHOTS, ns, str(name))]
        found["metadata"]["deletionTimestamp"] = _iso()
    if found.get("_volume"):
        docker.docker("volume", "rm", "-f", found["_volume"])
    return 200, found


def _create(fake: KubernetesFake, ns: str, snapshot: dict[str, Any]) -> tuple[int, Any]:
    meta = snapshot.setdefault("metadata", {})
    name = str(meta.get("name") or "")
    source = ((snapshot.get("spec") or {}).get("source") or {}).get("persistentVolumeClaimName")
    if not name or not source:
        return 422, ("Invalid", "VolumeSnapshot is invalid: metadata.name and spec.source are required")
    with fake.cond:
        if (SNAPSHOTS, ns, name) in fake.custom:
            return 409, ("AlreadyExists", f'{SNAPSHOTS}.{GROUP} "{name}" already exists')
        claim = fake.claims.get((ns, str(source)))
        meta.update(namespace=ns, uid=str(uuid.uuid4()), creationTimestamp=_iso())
        snapshot.update(kind="VolumeSnapshot", status={"readyToUse": False})
        fake.custom[(SNAPSHOTS, ns, name)] = snapshot
    if claim is None:
        why = f'persistentvolumeclaim "{source}" not found'
        message = f"failed to get input parameters to create snapshot {name}: {why}"
        snapshot["status"]["error"] = {"message": message, "time": _iso()}
        return 201, snapshot
    volume = f"k8s-fake-{fake.fake_id}-snap-{ns}-{name}"
    docker.docker("volume", "create", "--label", f"{OWNER_LABEL}={fake.fake_id}", volume)
    snapshot["_volume"] = volume
    if not copy_volume(str(claim["_volume"]), volume):
        snapshot["status"]["error"] = {"message": "the CSI driver failed to cut the snapshot", "time": _iso()}
        return 201, snapshot
    size = claim["spec"]["resources"]["requests"]["storage"]
    snapshot["status"] = {
        "readyToUse": True,
        "restoreSize": size,
        "creationTime": _iso(),
        "boundVolumeSnapshotContentName": f"snapcontent-{meta['uid']}",
    }
    return 201, snapshot


def _class() -> dict[str, Any]:
    meta = {"name": CLASS_NAME, "annotations": {DEFAULT_ANNOTATION: "true"}, "resourceVersion": "1"}
    found = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "VolumeSnapshotClass", "metadata": meta}
    return {**found, "driver": DRIVER, "deletionPolicy": "Delete"}


def _discovery() -> dict[str, Any]:
    verbs = ["create", "delete", "get", "list"]
    resources = [
        {"name": SNAPSHOTS, "singularName": "volumesnapshot", "namespaced": True, "kind": "VolumeSnapshot"},
        {
            "name": CLASSES,
            "singularName": "volumesnapshotclass",
            "namespaced": False,
            "kind": "VolumeSnapshotClass",
        },
    ]
    listed = [{**r, "verbs": verbs} for r in resources]
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{GROUP}/{VERSION}",
        "resources": listed,
    }


def _iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time()))
