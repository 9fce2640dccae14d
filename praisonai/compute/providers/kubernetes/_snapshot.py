"""Kubernetes snapshots: the instance's working dir, saved in the cluster, one of two ways.

- A ``VolumeSnapshot`` (``snapshot.storage.k8s.io/v1``) of the instance's PersistentVolumeClaim,
  when its working dir is on one (an instance provisioned with ``idle_action='pause'``, or started
  from such a snapshot) and the cluster has a ``VolumeSnapshotClass`` of the claim's CSI driver
  (its default one, else the only one): the storage copies the volume, often copy-on-write. A
  new instance from it gets a claim whose ``dataSource`` is the VolumeSnapshot (``_volumes``).
- Otherwise an archive: GNU tar of the working dir (``--one-file-system``, links archived as
  links, nothing followed out of it), made in the pod as root into the helper's spool (mode
  0700), read out and stored in a PersistentVolumeClaim of its own (the options' StorageClass,
  else the cluster's default) by a keeper pod (``_keeper``). A new instance is made as any other,
  and the archive unpacked into its working dir by GNU tar (which refuses members with ``..`` and
  makes links to outside paths only after every other member: none is written through one). The
  archive goes in and out over execs of their own (``_transport.run_exec``), not the helper's
  channel (which carries files as text), and passes through this process's memory, whole. An
  instance started from a VolumeSnapshot has its working dir on a claim, and so can be paused.

Only the working dir is saved: never the helper's spool, where the bound env is kept (left out
even when the spool is under the working dir), nor the pod's env (its spec), nor any file outside
the working dir, so no env value is in a snapshot. A working dir that is no longer the directory
at its path (a link put in its place, where the root is writable) is refused: the archive would
be made, as root, of whatever the link names. Each file is saved whole as it is when tar reads it
(a file replaced by a rename meanwhile is one version or the other); a VolumeSnapshot is the
volume at one instant, as a crash would leave it.

``restore`` refuses: the working dir is a volume mounted into the running pod, which cannot be
swapped for the snapshot's while the pod runs; ``fork(1)`` is the way. The snapshot's objects
carry its id and this home's tag as labels: ``held`` and ``remove`` find them from any process.
"""

from __future__ import annotations

import functools
import posixpath
import shlex
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import anyio

from praisonai._errors import PathOutsideWorkspaceError, ProvisionError
from praisonai._types import InstanceInfo
from praisonai.compute._threads import run_blocking
from praisonai.compute.abilities.snapshots import no_restore_in_place
from praisonai.compute.config import ComputeConfig
from praisonai.compute.providers.kubernetes import _pod
from praisonai.compute.providers.kubernetes._api import read_call
from praisonai.compute.providers.kubernetes._keeper import KEEPER_DEADLINE_S, Keepers
from praisonai.compute.providers.kubernetes._transport import run_exec
from praisonai.compute.providers.kubernetes._volumes import VolumeSnapshots

#: Run as root in the source pod: the archive's path, or ``moved`` (the working dir is elsewhere).
_MOVED = "moved"
_PACK = """
cd -P -- {ws} && [ "$(pwd -P)" = {ws} ] || {{ echo moved; exit 0; }}
mkdir -p -- {spool} && a=$(mktemp -- {spool}/snapshot.XXXXXXXXXX) || exit 1
tar --create --format=posix --numeric-owner --one-file-system --file="$a" \\
  --warning=no-file-changed --warning=no-file-removed {exclude} .
s=$?
[ $s -le 1 ] && {{ echo "$a"; exit 0; }}
rm -f -- "$a"
exit $s
"""
#: Run as the pod's user (root, unless ``run_as_user``) in the new pod: $1 the working dir, $2 the
#: archive's size; the archive on stdin.
_UNPACK = """
cd -P -- "$1" && [ "$(pwd -P)" = "$1" ] || exit 4
head -c "$2" | tar --extract --file=- --numeric-owner --preserve-permissions
"""


@dataclass(frozen=True)
class KubernetesSnapshotter:
    """``KubernetesCompute``'s snapshotter (``abilities.snapshots.Snapshotter``), from the
    provider's narrow parts: ``volume_snapshots`` (its claims' VolumeSnapshots), ``keepers`` (the
    archives' claims), ``create`` (its ``_create``: an instance, its claim's data from a
    VolumeSnapshot when given one), ``shell`` (runs a script in an instance's pod, raising on a
    failure), ``pod_of`` (an instance's pod name, blocking), ``workdir`` (an instance's working
    dir) and ``spool`` (where an instance's helper spools)."""

    volume_snapshots: VolumeSnapshots
    keepers: Keepers
    create: Callable[[str, ComputeConfig, dict[str, str], str | None], Awaitable[InstanceInfo]]
    shell: Callable[..., Awaitable[str]]
    pod_of: Callable[[str, str], str | None]
    workdir: Callable[[str], Awaitable[str]]
    spool: Callable[[str], str]
    # one keeper at a time per archive: its claim is ReadWriteOnce (see ``create_from``)
    _reading: dict[str, anyio.Lock] = field(default_factory=dict)

    async def take(self, instance_id: str, snapshot_id: str) -> int | None:
        if await self.volume_snapshots.take(instance_id, snapshot_id):
            return None  # the storage's copy: its size is the volume's, not what it holds
        keeps = "snapshots on kubernetes keep an archive of the working dir"
        storage = await self.keepers.volumes.storage_class("snapshot", keeps)
        archive = await self._pack(instance_id)
        await self.keepers.store(snapshot_id, archive, storage)
        return len(archive)

    async def create_from(
        self, instance_id: str, cfg: ComputeConfig, labels: dict[str, str], snapshot_id: str
    ) -> InstanceInfo:
        if await self.volume_snapshots.exists(snapshot_id, "provision"):
            return await self.create(instance_id, cfg, labels, snapshot_id)
        if not await self.keepers.exists(snapshot_id, "provision"):
            raise ProvisionError(
                f"snapshot {snapshot_id} is recorded but gone from the cluster (neither its "
                "VolumeSnapshot nor its archive's claim is there); remove it "
                "(praisonai.compute.remove_snapshot)",
                op="provision",
            )
        # forks read one after another: pods on two nodes cannot mount a ReadWriteOnce claim at once
        async with self._reading.setdefault(snapshot_id, anyio.Lock()):
            archive = await self.keepers.load(snapshot_id)
        info = await self.create(instance_id, cfg, labels, None)
        argv = [
            "sh",
            "-c",
            _UNPACK,
            "praisonai-unpack",
            posixpath.normpath(cfg.working_dir),
            str(len(archive)),
        ]
        await self._exec(instance_id, argv, archive, "provision")
        return info

    async def restore(self, instance_id: str, snapshot_id: str) -> InstanceInfo:
        raise no_restore_in_place(
            "kubernetes",
            instance_id,
            snapshot_id,
            "its working dir is a volume mounted into the running pod, which cannot be swapped "
            "for the snapshot's while the pod runs",
        )

    async def remove(self, snapshot_id: str) -> bool:
        removed = await self.volume_snapshots.remove(snapshot_id)
        return await self.keepers.remove(snapshot_id) or removed

    async def held(self) -> list[str]:
        return sorted(set(await self.volume_snapshots.held()) | set(await self.keepers.held()))

    async def _pack(self, instance_id: str) -> bytes:
        """The archive of the instance's working dir (see the module docstring)."""
        ws = posixpath.normpath(await self.workdir(instance_id))
        spool = posixpath.normpath(self.spool(instance_id))
        inside = posixpath.relpath(spool, ws)
        exclude = "" if inside.startswith("..") else f"--exclude={shlex.quote('./' + inside)}"
        q = shlex.quote
        script = _PACK.format(ws=q(ws), spool=q(spool), exclude=exclude)
        path = (await self.shell(instance_id, script, "snapshot", privileged=True)).strip()
        if path == _MOVED:
            raise PathOutsideWorkspaceError(
                f"the working dir {ws} of {instance_id} is no longer the directory at its path (a link "
                "was put in its place); nothing was saved",
                op="snapshot",
            )
        try:
            return await self._exec(instance_id, ["cat", "--", path], b"", "snapshot")
        finally:
            await self.shell(instance_id, f"rm -f -- {q(path)}", "snapshot", privileged=True)

    async def _exec(self, instance_id: str, argv: list[str], stdin: bytes, op: str) -> bytes:
        """``argv``'s stdout, run with ``stdin`` in the instance's pod as the pod's user, over an exec
        of its own: bytes as they are, and fast (the helper's channel carries files as text)."""
        found = await run_blocking(functools.partial(self.pod_of, instance_id, op))
        name, volumes = found or _pod.pod_name(instance_id), self.keepers.volumes
        run = functools.partial(
            run_exec, volumes.core(), volumes.namespace(), name, argv, stdin, op, KEEPER_DEADLINE_S
        )
        return bytes(await read_call(op, f"pod {name}", run))
