"""The claims that keep snapshots' archives, and the short-lived *keeper* pods that write and read
them: a claim can be reached only from a pod that mounts it, and an instance's pod never mounts
another's. A keeper runs nothing but ``sleep`` (its deadline, the cluster's backstop should this
process die) as the commands' uid with no capability, no service account token and a read-only
root; the archive goes in and out over ``pods/exec`` (``head -c`` its exact size in, so no EOF is
needed, as a v4 exec stream cannot send one; ``cat`` out). Claim and keepers carry the snapshot's
id and this home's tag as labels, so ``held`` and ``remove`` find them from any process."""

from __future__ import annotations

import functools
import math
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
from kubernetes.utils import parse_quantity

from praisonai._errors import InstanceNotFoundError
from praisonai._home import home_tag
from praisonai.compute.lifecycle import LABEL_HOME
from praisonai.compute.providers.kubernetes import _pod
from praisonai.compute.providers.kubernetes._api import read_call, write_call
from praisonai.compute.providers.kubernetes._pause import Volumes
from praisonai.compute.providers.kubernetes._transport import run_exec
from praisonai.compute.separation import COMMAND_UID

LABEL_SNAPSHOT = "praisonai.snapshot"
#: Seconds a keeper pod may live (writing or reading a large archive on a slow volume).
KEEPER_DEADLINE_S = 900
_MOUNT = "/snapshot"
_ARCHIVE = f"{_MOUNT}/archive.tar"


def claim_name(snapshot_id: str) -> str:
    """The archive's claim: the snapshot id as a DNS-1123 name."""
    return _pod.pod_name(snapshot_id)


def labels_of(snapshot_id: str) -> dict[str, str]:
    return {LABEL_SNAPSHOT: snapshot_id, LABEL_HOME: home_tag()}


def mine(snapshot_id: str | None = None) -> str:
    """The label selector of this home's snapshot objects (of ``snapshot_id``'s alone, given one)."""
    snapshot = LABEL_SNAPSHOT if snapshot_id is None else f"{LABEL_SNAPSHOT}={snapshot_id}"
    return f"{snapshot},{LABEL_HOME}={home_tag()}"


@dataclass(frozen=True)
class Keepers:
    """The archives' claims and keeper pods, from the provider's narrow parts: its ``volumes``
    (client, namespace, rate limit, options) and ``until_ready`` (wait until a pod is ready)."""

    volumes: Volumes
    until_ready: Callable[[str], Awaitable[Any]]

    async def store(self, snapshot_id: str, archive: bytes, storage: str) -> None:
        """A new claim of class ``storage`` holding ``archive``; removed again when that fails."""
        core, ns, name = self.volumes.core(), self.volumes.namespace(), claim_name(snapshot_id)
        body = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "labels": labels_of(snapshot_id)},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": _size(len(archive), self.volumes.options.volume_size)}},
                "storageClassName": storage,
            },
        }
        create = core.create_namespaced_persistent_volume_claim
        await write_call(self.volumes.writes, "snapshot", f"persistent volume claim {name}", create, ns, body)
        try:
            argv = [
                "sh",
                "-c",
                f"head -c {len(archive)} > {_ARCHIVE}.part && mv -f {_ARCHIVE}.part {_ARCHIVE}",
            ]
            await self._in_keeper(snapshot_id, argv, archive, "snapshot")
        except BaseException:
            with anyio.CancelScope(shield=True):  # cancelled too: nothing half-made stays
                await self.remove(snapshot_id)
            raise

    async def load(self, snapshot_id: str) -> bytes:
        """The archive, read from its claim."""
        return await self._in_keeper(snapshot_id, ["cat", _ARCHIVE], b"", "provision")

    async def exists(self, snapshot_id: str, op: str) -> bool:
        core, name = self.volumes.core(), claim_name(snapshot_id)
        read = core.read_namespaced_persistent_volume_claim
        try:
            await read_call(op, f"persistent volume claim {name}", read, name, self.volumes.namespace())
        except InstanceNotFoundError:
            return False
        return True

    async def remove(self, snapshot_id: str) -> bool:
        """Delete the archive's claim and any keeper left of it; whether the claim was there."""
        core, ns, writes = self.volumes.core(), self.volumes.namespace(), self.volumes.writes
        listing = core.list_namespaced_pod
        pods = await read_call("remove_snapshot", "the pods", listing, ns, label_selector=mine(snapshot_id))
        for pod in pods.items:
            await self.volumes.delete_pod(str(pod.metadata.name), "remove_snapshot")
        name = claim_name(snapshot_id)
        delete = core.delete_namespaced_persistent_volume_claim
        try:
            await write_call(writes, "remove_snapshot", f"persistent volume claim {name}", delete, name, ns)
        except InstanceNotFoundError:
            return False
        return True

    async def held(self) -> list[str]:
        core, ns = self.volumes.core(), self.volumes.namespace()
        found = await read_call(
            "list", "the claims", core.list_namespaced_persistent_volume_claim, ns, label_selector=mine()
        )
        return [str((c.metadata.labels or {})[LABEL_SNAPSHOT]) for c in found.items]

    async def _in_keeper(self, snapshot_id: str, argv: list[str], stdin: bytes, op: str) -> bytes:
        """``argv``'s stdout, run with ``stdin`` in a new keeper pod of the snapshot's claim, which
        is deleted after, whatever happens."""
        core, ns = self.volumes.core(), self.volumes.namespace()
        body = keeper_pod(snapshot_id, self.volumes.options.image, self.volumes.options.run_as_user)
        name = str(body["metadata"]["name"])
        create = core.create_namespaced_pod
        await write_call(self.volumes.writes, op, f"pod {name}", create, ns, body)
        try:
            await self.until_ready(name)
            run = functools.partial(run_exec, core, ns, name, argv, stdin, op, KEEPER_DEADLINE_S)
            return bytes(await read_call(op, f"pod {name}", run))
        finally:
            with anyio.CancelScope(shield=True):
                await self.volumes.delete_pod(name, op)


def keeper_pod(snapshot_id: str, image: str, run_as_user: int | None) -> dict[str, Any]:
    """A keeper pod of the snapshot's claim (see the module docstring)."""
    uid = COMMAND_UID if run_as_user is None else run_as_user
    box = {
        "name": "sandbox",
        "image": image,
        "command": ["sleep", str(KEEPER_DEADLINE_S)],
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": [{"name": "archive", "mountPath": _MOUNT}],
    }
    volume = {"name": "archive", "persistentVolumeClaim": {"claimName": claim_name(snapshot_id)}}
    spec = {
        "containers": [box],
        "restartPolicy": "Never",
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "terminationGracePeriodSeconds": 1,
        "activeDeadlineSeconds": KEEPER_DEADLINE_S,
        "volumes": [volume],
        "securityContext": {"runAsUser": uid, "runAsGroup": uid, "fsGroup": uid, "runAsNonRoot": uid != 0},
    }
    meta = {"name": f"{claim_name(snapshot_id)}-{secrets.token_hex(3)}", "labels": labels_of(snapshot_id)}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def _size(archive: int, least: str) -> str:
    """The claim's request: the options' volume size, or the archive's size with room to spare."""
    needed_mi = math.ceil(archive * 1.1 / 2**20) + 16
    least_mi = math.ceil(int(parse_quantity(least)) / 2**20)  # type: ignore[no-untyped-call]  # no annotations
    return f"{max(needed_mi, least_mi)}Mi"
