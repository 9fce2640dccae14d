"""VolumeSnapshots (``snapshot.storage.k8s.io/v1``, the CSI external-snapshotter's CRDs) of the
instances' PersistentVolumeClaims, where the cluster has a ``VolumeSnapshotClass`` of the claim's
CSI driver (its StorageClass's provisioner): the default one of that driver, else the only one.
A cluster without the CRDs (404), whose role for us cannot read them (403), or without such a
class has none, and ``_snapshot`` archives instead. The VolumeSnapshot keeps the source claim's
StorageClass and size as annotations: a new claim from it (``dataSource``) needs a class of the
same driver and at least that size."""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import Any

import anyio
from kubernetes import client

from praisonai._errors import AuthenticationError, InstanceNotFoundError, ProvisionError
from praisonai.compute.providers.kubernetes._api import read_call, write_call
from praisonai.compute.providers.kubernetes._keeper import (
    KEEPER_DEADLINE_S,
    LABEL_SNAPSHOT,
    claim_name,
    labels_of,
    mine,
)
from praisonai.compute.providers.kubernetes._pause import Volumes

GROUP, VERSION = "snapshot.storage.k8s.io", "v1"
SNAPSHOTS, CLASSES = "volumesnapshots", "volumesnapshotclasses"
DEFAULT_SNAPSHOT_CLASS = "snapshot.storage.kubernetes.io/is-default-class"
STORAGE = "praisonai.storage-class"  # the source claim's StorageClass and size, on the snapshot
SIZE = "praisonai.size"
_READY_POLL_S = 0.5
#: What a read or delete of VolumeSnapshots raises where there are none of ours to find.
_NONE = (InstanceNotFoundError, AuthenticationError)


@dataclass(frozen=True)
class Source:
    """What a claim made from a VolumeSnapshot needs: its ``dataSource``, class and size."""

    data_source: dict[str, str]
    storage_class: str
    size: str


@dataclass(frozen=True)
class VolumeSnapshots:
    """The instances' claims' VolumeSnapshots, from the provider's ``volumes`` (its claims,
    client, namespace and rate limit)."""

    volumes: Volumes

    def _custom(self) -> Any:
        return client.CustomObjectsApi(self.volumes.core().api_client)

    async def take(self, instance_id: str, snapshot_id: str) -> bool:
        """Snapshot the instance's claim and wait until it is ready to use; ``False`` (nothing
        made) when it has no claim or the cluster no VolumeSnapshotClass for it."""
        claim = await self.volumes.find(instance_id, "snapshot")
        if claim is None or not claim.spec.storage_class_name:
            return False
        api = self.volumes.core().api_client
        found = functools.partial(_class_for, api, str(claim.spec.storage_class_name))
        snapshot_class = await read_call("snapshot", "the volume snapshot classes", found)
        if snapshot_class is None:
            return False
        requests = (claim.spec.resources.requests if claim.spec.resources else None) or {}
        meta = {
            "name": claim_name(snapshot_id),
            "labels": labels_of(snapshot_id),
            "annotations": {STORAGE: claim.spec.storage_class_name, SIZE: requests.get("storage", "1Gi")},
        }
        spec = {
            "volumeSnapshotClassName": snapshot_class,
            "source": {"persistentVolumeClaimName": claim.metadata.name},
        }
        body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "VolumeSnapshot", "metadata": meta, "spec": spec}
        create = self._custom().create_namespaced_custom_object
        what = f"volume snapshot {meta['name']}"
        await write_call(
            self.volumes.writes, "snapshot", what, create, GROUP, VERSION, self._ns(), SNAPSHOTS, body
        )
        try:
            await self._until_ready(snapshot_id)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self.remove(snapshot_id)
            raise
        return True

    async def source(self, snapshot_id: str) -> Source:
        """The ``dataSource``, StorageClass and size of a claim made from the snapshot."""
        found = await self._read(snapshot_id, "provision")
        annotations = found["metadata"].get("annotations") or {}
        data_source = {"apiGroup": GROUP, "kind": "VolumeSnapshot", "name": claim_name(snapshot_id)}
        return Source(data_source, str(annotations[STORAGE]), str(annotations[SIZE]))

    async def exists(self, snapshot_id: str, op: str) -> bool:
        try:
            await self._read(snapshot_id, op)
        except _NONE:  # none, or no VolumeSnapshot CRD in the cluster, or no right to it
            return False
        return True

    async def remove(self, snapshot_id: str) -> bool:
        delete, name = self._custom().delete_namespaced_custom_object, claim_name(snapshot_id)
        where = (GROUP, VERSION, self._ns(), SNAPSHOTS, name)
        try:
            await write_call(
                self.volumes.writes, "remove_snapshot", f"volume snapshot {name}", delete, *where
            )
        except _NONE:
            return False
        return True

    async def held(self) -> list[str]:
        listing = functools.partial(
            self._custom().list_namespaced_custom_object, GROUP, VERSION, self._ns(), SNAPSHOTS
        )
        try:
            found = await read_call("list", "the volume snapshots", listing, label_selector=mine())
        except _NONE:  # no VolumeSnapshot CRD in the cluster, or no right to it: none of ours
            return []
        return [str(item["metadata"]["labels"][LABEL_SNAPSHOT]) for item in found.get("items") or []]

    def _ns(self) -> str:
        return self.volumes.namespace()

    async def _read(self, snapshot_id: str, op: str) -> dict[str, Any]:
        name = claim_name(snapshot_id)
        read = self._custom().get_namespaced_custom_object
        where = (GROUP, VERSION, self._ns(), SNAPSHOTS, name)
        found: dict[str, Any] = await read_call(op, f"volume snapshot {name}", read, *where)
        return found

    async def _until_ready(self, snapshot_id: str) -> None:
        """Wait until the VolumeSnapshot is ``readyToUse``; its ``status.error`` fails it."""
        deadline = time.monotonic() + KEEPER_DEADLINE_S
        while time.monotonic() < deadline:
            status = (await self._read(snapshot_id, "snapshot")).get("status") or {}
            if status.get("readyToUse"):
                return
            if error := (status.get("error") or {}).get("message"):
                raise ProvisionError(
                    f"the cluster failed volume snapshot {snapshot_id}: {error}", op="snapshot"
                )
            await anyio.sleep(_READY_POLL_S)
        raise ProvisionError(
            f"volume snapshot {snapshot_id} was not ready to use within {KEEPER_DEADLINE_S}s", op="snapshot"
        )


def _class_for(api: Any, storage_class: str) -> str | None:
    """The VolumeSnapshotClass for claims of ``storage_class`` (blocking): of its provisioner's
    driver, the default one, else the only one; ``None`` when none (or no CRD)."""
    try:
        provisioner = client.StorageV1Api(api).read_storage_class(storage_class).provisioner
        listed: Any = client.CustomObjectsApi(api).list_cluster_custom_object(GROUP, VERSION, CLASSES)
    except client.ApiException as exc:
        # no such StorageClass, no VolumeSnapshot CRDs, or no right to read them (a namespaced
        # role): a class we cannot see is one we cannot use, so an archive then
        if exc.status in (403, 404):
            return None
        raise
    classes = [c for c in listed.get("items") or [] if c.get("driver") == provisioner]
    default = [
        c for c in classes if (c["metadata"].get("annotations") or {}).get(DEFAULT_SNAPSHOT_CLASS) == "true"
    ]
    chosen = default or (classes if len(classes) == 1 else [])
    return str(chosen[0]["metadata"]["name"]) if chosen else None


def _annotated(obj: dict[str, Any], key: str) -> str | None:
    return (obj["metadata"].get("annotations") or {}).get(key)
