"""Pause and resume for local instances: the workspace stays, its processes end.

A paused instance's directory holds a ``paused`` marker, so every process of the home sees the
state (``praisonai compute ps``, the next call from another process). Its processes are killed
as a shutdown kills them (process groups, then those carrying the instance's marker); resuming
removes the marker, and the next command starts afresh in the kept workspace.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import anyio

from praisonai._types import InstanceInfo
from praisonai.compute.providers.local._process import kill_group, kill_marked
from praisonai.compute.providers.local._record import Instance
from praisonai.runtime.pool import ChannelPool

MARKER = "paused"


def is_paused(root: Path) -> bool:
    """Whether the instance at ``root`` is paused."""
    return (root / MARKER).exists()


async def end_processes(root: Path, instance_id: str) -> None:
    """Kill every process of the instance: its recorded groups, then those that left them."""
    for entry in (root / "pgids").glob("*"):
        kill_group(int(entry.name))
    await anyio.to_thread.run_sync(kill_marked, instance_id)


@dataclass(frozen=True)
class LocalPauser:
    """``LocalCompute``'s pauser (``abilities.pause.Pauser``): ``load`` finds an instance's record
    (``InstanceNotFoundError`` when there is none), ``channels`` are the provider's."""

    load: Callable[[str], Instance]
    channels: ChannelPool

    async def pause(self, instance_id: str) -> InstanceInfo:
        """End the instance's processes and mark it paused (idempotent)."""
        inst = self.load(instance_id)
        self.channels.drop(instance_id)
        await end_processes(inst.root, instance_id)
        (inst.root / MARKER).touch()
        return inst.info(paused=True)

    async def resume(self, instance_id: str) -> InstanceInfo:
        """Mark the instance running again (idempotent)."""
        inst = self.load(instance_id)
        (inst.root / MARKER).unlink(missing_ok=True)
        return inst.info()

    async def paused_disk(self, instance_id: str) -> int | None:
        return await disk(self.load(instance_id).workspace)


async def disk(workspace: Path) -> int:
    """The bytes the workspace's files hold (links counted as themselves, never followed)."""

    def walk() -> int:
        total = 0
        for folder, dirs, files in os.walk(workspace):
            for name in (*dirs, *files):
                try:
                    total += os.lstat(os.path.join(folder, name)).st_size
                except OSError:  # removed meanwhile
                    continue
        return total

    return await anyio.to_thread.run_sync(walk)
