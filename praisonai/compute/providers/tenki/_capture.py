"""Tenki captures: Tenki snapshots named ``praisonai-<tag>``, found among the account's ready
snapshots; a new sandbox starts from the snapshot's id."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from praisonai._types import InstanceInfo
from praisonai.compute.abilities.captures import Capturer, SnapshotRef, StartFrom
from praisonai.compute.config import ComputeConfig
from praisonai.compute.providers.tenki._client import retried, translated


class TenkiCapturer(Capturer):
    """A ``TenkiCompute``'s captures, built from its SDK client of this event loop (``sdk``), its
    sandbox of an instance (``sandbox``, for an operation) and its start of a sandbox from a
    snapshot (``start``). Tenki keeps the list of snapshots: ``praisonai env captures`` lists none here."""

    def __init__(
        self,
        *,
        sdk: Callable[[], Any],
        sandbox: Callable[[str, str], contextlib.AbstractAsyncContextManager[Any]],
        start: StartFrom,
    ) -> None:
        self._sdk, self._sandbox, self._start = sdk, sandbox, start

    async def find(self, tag: str) -> SnapshotRef | None:
        sdk = self._sdk()
        snapshots = await retried("capture", lambda: sdk.snapshots.list())
        for snap in snapshots:
            if snap.name == snapshot_name(tag) and snap.state == "READY":
                return SnapshotRef("tenki", snap.id)
        return None

    async def save(self, instance_id: str, tag: str, cfg: ComputeConfig) -> SnapshotRef:
        async with self._sandbox(instance_id, "capture") as sandbox:
            with translated("capture", instance_id=instance_id):
                snap = await sandbox.snapshot(name=snapshot_name(tag), wait=True)
        return SnapshotRef("tenki", snap.id)

    async def create_from(
        self, instance_id: str, cfg: ComputeConfig, labels: dict[str, str], snapshot: SnapshotRef
    ) -> InstanceInfo:
        return await self._start(instance_id, cfg, labels, snapshot.ref)


def snapshot_name(tag: str) -> str:
    return f"praisonai-{tag}"
