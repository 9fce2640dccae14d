"""Captures: saved post-setup states new instances start from. Turned on by ``Capability.CAPTURE``.

A provider with ``capture`` implements the three hooks ``_find_snapshot``, ``_snapshot`` and
``_create_from_snapshot``; ``praisonai.compute.lifecycle`` decides when to save and when to start
from a capture. ``list_captures`` and ``prune_captures`` are public; without the capability they
list and remove nothing.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from praisonai._errors import UnsupportedFeatureError
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


class Captures:
    """The capture methods of the provider contract."""

    name: ClassVar[str]

    async def list_captures(self) -> list[CaptureInfo]:
        """Saved post-setup states, most recently used first (none without ``capture``)."""
        return []

    async def prune_captures(
        self, *, older_than_s: float | None = None, keep: int | None = None, dry_run: bool = False
    ) -> list[CaptureInfo]:
        """Remove captures unused for ``older_than_s`` seconds and all but the ``keep`` most
        recently used (those an instance still runs from stay); return what was (or would be)
        removed."""
        return []

    async def _find_snapshot(self, tag: str) -> SnapshotRef | None:
        """The snapshot saved as capture ``tag`` (noting that it was used), or ``None``
        (providers with ``capture``; any process's snapshots count)."""
        return None

    async def _snapshot(self, instance_id: str, tag: str, cfg: ComputeConfig) -> SnapshotRef:
        """Save the instance as capture ``tag``, without ``cfg``'s env values (providers with
        ``capture``); :meth:`_find_snapshot` finds it from then on."""
        raise UnsupportedFeatureError(f"the {self.name} provider cannot capture instances", op="capture")

    async def _create_from_snapshot(
        self, instance_id: str, cfg: ComputeConfig, labels: dict[str, str], snapshot: SnapshotRef
    ) -> InstanceInfo:
        """As ``_create``, but the instance starts from ``snapshot`` (one of this provider's)."""
        raise UnsupportedFeatureError(
            f"the {self.name} provider cannot start from a snapshot", op="provision"
        )
