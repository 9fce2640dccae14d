"""Daytona captures: Daytona snapshots named ``praisonai-<capture tag>`` (``create_snapshot``, then
``create(CreateSandboxFromSnapshotParams(snapshot=name))``); a snapshot keeps the filesystem, not
the env, and a sandbox made from one takes the snapshot's resources."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from praisonai._types import InstanceInfo
from praisonai.compute.abilities.captures import Capturer, SnapshotRef, StartFrom
from praisonai.compute.config import ComputeConfig
from praisonai.compute.providers.daytona._client import translated


class DaytonaCapturer(Capturer):
    """A ``DaytonaCompute``'s captures, built from its SDK client (``client``), its sandbox of an
    instance (``sandbox``, for an operation) and its start of a sandbox from a snapshot
    (``start``). Daytona keeps the list of snapshots: ``praisonai env captures`` lists none here."""

    def __init__(
        self,
        *,
        client: Callable[[], contextlib.AbstractAsyncContextManager[Any]],
        sandbox: Callable[[str, str], contextlib.AbstractAsyncContextManager[Any]],
        start: StartFrom,
    ) -> None:
        self._client, self._sandbox, self._start = client, sandbox, start

    async def find(self, tag: str) -> SnapshotRef | None:
        from daytona import DaytonaNotFoundError

        async with self._client() as sdk:
            try:
                snapshot = await sdk.snapshot.get(snapshot_name(tag))
            except DaytonaNotFoundError:
                return None
            except Exception as exc:
                with translated("capture"):
                    raise exc
        state = str(getattr(snapshot.state, "value", snapshot.state))
        return SnapshotRef("daytona", snapshot.name) if state == "active" else None

    async def save(self, instance_id: str, tag: str, cfg: ComputeConfig) -> SnapshotRef:
        await create_snapshot(self._sandbox, instance_id, snapshot_name(tag), "capture")
        return SnapshotRef("daytona", snapshot_name(tag))

    async def create_from(
        self, instance_id: str, cfg: ComputeConfig, labels: dict[str, str], snapshot: SnapshotRef
    ) -> InstanceInfo:
        return await self._start(instance_id, cfg, labels, snapshot.ref)


def snapshot_name(tag: str) -> str:
    return f"praisonai-{tag}"


async def create_snapshot(
    sandbox: Callable[[str, str], contextlib.AbstractAsyncContextManager[Any]],
    instance_id: str,
    name: str,
    op: str,
) -> None:
    """A Daytona snapshot ``name`` of the instance's sandbox (``sandbox.create_snapshot``)."""
    # The sandbox's env_vars are not part of its filesystem: a snapshot does not keep them.
    async with sandbox(instance_id, op) as found:
        with translated(op, instance_id=instance_id):
            await found.create_snapshot(name, timeout=1800)
