"""Captures: saved post-setup states new instances start from. Brought by the provider's
*capturer* part (``Capability.CAPTURE``).

A provider that captures holds a :class:`Capturer` (docker commits the container to an image; E2B,
Daytona and Tenki take a named snapshot; Modal snapshots the filesystem);
``praisonai.compute.lifecycle`` decides when to save and when to start from a capture; ``praisonai
env captures`` lists and prunes them through the part (without one there is nothing to list).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import Protocol

from praisonai._types import CaptureInfo, InstanceInfo
from praisonai.compute.config import ComputeConfig


@dataclasses.dataclass(frozen=True, slots=True)
class SnapshotRef:
    """A saved state of an instance that new instances can start from (a capture).

    Opaque outside the provider that made it: ``ref`` is whatever that provider starts from (a
    docker image tag; an E2B snapshot id, a Modal image id, a Daytona snapshot name).
    """

    provider: str
    ref: str
    created_at: float | None = None


#: How a capturer starts an instance from a saved state: the provider's own start
#: ``(instance_id, cfg, labels, ref)`` of an instance from ``ref``, the image, template or snapshot
#: its vendor starts from (a ``SnapshotRef``'s ``ref``).
StartFrom = Callable[[str, ComputeConfig, dict[str, str], str], Awaitable[InstanceInfo]]


class Capturer(Protocol):
    """A provider's part that saves instances as captures and starts new instances from them.

    A capturer whose captures live in its vendor's own list subclasses this protocol and keeps
    the defaults of :meth:`captures` and :meth:`prune`: it lists and removes nothing here."""

    async def find(self, tag: str) -> SnapshotRef | None:
        """The snapshot saved as capture ``tag`` (noting that it was used), or ``None``; any
        process's snapshots count."""
        ...

    async def save(self, instance_id: str, tag: str, cfg: ComputeConfig) -> SnapshotRef:
        """Save the instance as capture ``tag``, without ``cfg``'s env values; :meth:`find` finds
        it from then on."""
        ...

    async def create_from(
        self, instance_id: str, cfg: ComputeConfig, labels: dict[str, str], snapshot: SnapshotRef
    ) -> InstanceInfo:
        """As the provider's ``_create``, but the instance starts from ``snapshot`` (one of this
        provider's)."""
        ...

    async def captures(self) -> list[CaptureInfo]:
        """Saved post-setup states, most recently used first."""
        return []

    async def prune(
        self, *, older_than_s: float | None = None, keep: int | None = None, dry_run: bool = False
    ) -> list[CaptureInfo]:
        """Remove captures unused for ``older_than_s`` seconds and all but the ``keep`` most
        recently used (those an instance still runs from stay); return what was (or would be)
        removed."""
        return []
