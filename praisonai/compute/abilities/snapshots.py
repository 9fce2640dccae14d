"""Snapshots: a running instance's filesystem saved under an id, new instances started from it
(``fork``), and the instance rolled back to it (``restore``) where the provider can. Brought by the
provider's *snapshotter* part (``Capability.SNAPSHOT``).

A provider that snapshots holds a :class:`Snapshotter` (docker commits the container to an image,
layers shared, as captures do; local copies the workspace with reflinks where the filesystem has
them). Unlike a capture, which saves an instance right after its setup, a snapshot is taken when
the user asks, while the instance keeps running. No env value is ever in one: config (env, limits,
network) comes from the call that starts an instance from it.

:class:`SnapshotFront` is the public side for one provider, built from the provider's name, its
id check and its part (never the provider object): it checks the id, refuses in one sentence
without the part, and records each snapshot in the home's ledger (``compute.snapshots``) so that
any process lists and removes it.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from praisonai._errors import UnsupportedFeatureError
from praisonai._types import Capability, InstanceInfo
from praisonai.compute.abilities.part import held
from praisonai.compute.config import ComputeConfig


@dataclasses.dataclass(frozen=True, slots=True)
class SnapshotInfo:
    """A saved filesystem of an instance (``sb.snapshot()``; ``praisonai.compute.list_snapshots``).

    ``id`` (``snap_<12 hex>``) and ``name`` (the caller's, unique in the home, or ``None``) both
    find it again; ``source`` is the instance it was taken from; ``size_bytes`` is what it holds
    on its provider (``None``: the provider cannot say)."""

    id: str
    name: str | None
    provider: str
    source: str
    created_at: float
    size_bytes: int | None = None


def new_snapshot_id() -> str:
    """A fresh snapshot id (the form ``compute.snapshots.SNAPSHOT_ID`` accepts)."""
    return f"snap_{uuid.uuid4().hex[:12]}"


class Snapshotter(Protocol):
    """A provider's part that saves instances' filesystems as snapshots, keyed by the snapshot's
    id, and starts new instances from them."""

    async def take(self, instance_id: str, snapshot_id: str) -> int | None:
        """Save the running instance's filesystem as ``snapshot_id`` (whole files: none
        half-written, and no env value bound to it); return its size in bytes when known."""
        ...

    async def create_from(
        self, instance_id: str, cfg: ComputeConfig, labels: dict[str, str], snapshot_id: str
    ) -> InstanceInfo:
        """As the provider's ``_create``, but the instance's files are the snapshot's; its config
        (env, limits, network) is ``cfg``'s alone."""
        ...

    async def restore(self, instance_id: str, snapshot_id: str) -> InstanceInfo:
        """Roll the instance back to the snapshot under the same id, or refuse in one sentence
        (``UnsupportedFeatureError``) saying that ``fork(1)`` is the way."""
        ...

    async def remove(self, snapshot_id: str) -> bool:
        """Remove the snapshot; ``False`` when nothing was there.

        Raises:
            ConfigError: an instance still starts from it (docker: a container of its image)."""
        ...

    async def held(self) -> list[str]:
        """The ids of every snapshot this home holds on the provider (for reconciling the
        ledger's rows and for tests that check nothing leaks)."""
        ...


#: How the front records a snapshot in the home (``compute.snapshots.record``).
Record = Callable[[SnapshotInfo, Mapping[str, Any]], Awaitable[None]]


@dataclasses.dataclass(frozen=True)
class SnapshotFront:
    """The public snapshot calls for one provider: ``provider`` (its name), ``check_id`` (refuses
    an id that is not one of its instances), ``snapshotter`` (its part, or ``None``), ``spec`` (its
    options as a record, so another process can rebuild it) and ``record`` (the ledger's)."""

    provider: str
    check_id: Callable[[str], None]
    snapshotter: Snapshotter | None
    spec: Mapping[str, Any]
    record: Record

    def part(self, what: str, op: str) -> Snapshotter:
        """The snapshotter, or the one-sentence refusal of ``what``."""
        return held(self.snapshotter, self.provider, what, op, Capability.SNAPSHOT)

    async def take(self, instance_id: str, name: str | None) -> SnapshotInfo:
        """Snapshot the instance as ``name`` (checked and free before anything is saved by the
        caller: ``compute.snapshots.check_name``) and record it."""
        self.check_id(instance_id)
        snapshotter = self.part("snapshots", "snapshot")
        snapshot_id = new_snapshot_id()
        size = await snapshotter.take(instance_id, snapshot_id)
        info = SnapshotInfo(snapshot_id, name, self.provider, instance_id, time.time(), size)
        try:
            await self.record(info, self.spec)
        except BaseException:  # a name taken meanwhile, an unusable ledger: nothing unrecorded stays
            await snapshotter.remove(snapshot_id)
            raise
        return info

    async def restore(self, instance_id: str, snapshot: SnapshotInfo) -> InstanceInfo:
        """Roll the instance back to ``snapshot`` (one of this provider's: the caller checked)."""
        self.check_id(instance_id)
        snapshotter = self.part("restoring snapshots", "restore")
        return await snapshotter.restore(instance_id, snapshot.id)


def no_restore_in_place(
    provider: str, instance_id: str, snapshot_id: str, why: str
) -> UnsupportedFeatureError:
    """The one sentence of a snapshotter whose vendor cannot roll an instance back in place
    (``why``), pointing at the way that works: a new instance from the snapshot."""
    return UnsupportedFeatureError(
        f"{provider} cannot roll instance {instance_id} back in place ({why}); start a new instance "
        f"from snapshot {snapshot_id} instead: sb.fork(1), "
        f"or Sandbox.create({provider!r}, from_snapshot=...)",
        op="restore",
    )
