"""E2B captures: named E2B snapshots (``praisonai-capture-<tag>``), found by name from any process;
a new instance starts from the snapshot id as its template."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from praisonai._types import InstanceInfo
from praisonai.compute.abilities.captures import Capturer, SnapshotRef, StartFrom
from praisonai.compute.config import ComputeConfig
from praisonai.compute.providers.e2b._errors import translated
from praisonai.compute.providers.e2b._meta import capture_name


class E2BCapturer(Capturer):
    """An ``E2BCompute``'s captures, built from its SDK parameters (``params``), its connected
    sandbox of an instance (``sandbox``) and its start of a sandbox from a template (``start``).
    E2B keeps the list of snapshots: ``praisonai env captures`` lists none here."""

    def __init__(
        self,
        *,
        params: Callable[[], dict[str, Any]],
        sandbox: Callable[[str], Awaitable[Any]],
        start: StartFrom,
    ) -> None:
        self._params, self._sandbox, self._start = params, sandbox, start

    async def find(self, tag: str) -> SnapshotRef | None:
        found = await snapshot_named(self._params(), capture_name(tag), "capture")
        return None if found is None else SnapshotRef("e2b", found)

    async def save(self, instance_id: str, tag: str, cfg: ComputeConfig) -> SnapshotRef:
        """A named E2B snapshot. A full snapshot keeps envd's memory, and with it the env given at
        create; with env values, only the filesystem is saved (``mode="filesystem"``, which a team
        without that feature is refused: set ``capture: false`` there)."""
        sandbox = await self._sandbox(instance_id)
        mode = "filesystem" if cfg.env else None
        with translated("capture", instance_id):
            info = await sandbox.create_snapshot(name=capture_name(tag), mode=mode)
        return SnapshotRef("e2b", info.snapshot_id, time.time())

    async def create_from(
        self, instance_id: str, cfg: ComputeConfig, labels: dict[str, str], snapshot: SnapshotRef
    ) -> InstanceInfo:
        return await self._start(instance_id, cfg, labels, snapshot.ref)  # a snapshot id is a template


async def snapshot_named(params: dict[str, Any], name: str, op: str) -> str | None:
    """The id of the E2B snapshot named ``name``, or ``None`` when there is none."""
    from e2b import AsyncSandbox

    with translated(op):
        pages = AsyncSandbox.list_snapshots(name=name, **params)
        while pages.has_next:
            for snapshot in await pages.next_items():
                if name in snapshot.names:
                    return str(snapshot.snapshot_id)
    return None
