"""Pause and resume for local instances: the workspace stays, its processes end.

A paused instance's directory holds a ``paused`` marker, so every process of the home sees the
state (``praisonai compute ps``, the next call from another process). Its processes are killed
as a shutdown kills them (process groups, then those carrying the instance's marker); resuming
removes the marker, and the next command starts afresh in the kept workspace.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio

from praisonai.compute.providers.local._process import kill_group, kill_marked

MARKER = "paused"


def is_paused(root: Path) -> bool:
    """Whether the instance at ``root`` is paused."""
    return (root / MARKER).exists()


async def end_processes(root: Path, instance_id: str) -> None:
    """Kill every process of the instance: its recorded groups, then those that left them."""
    for entry in (root / "pgids").glob("*"):
        kill_group(int(entry.name))
    await anyio.to_thread.run_sync(kill_marked, instance_id)


async def pause(root: Path, instance_id: str) -> None:
    """End the instance's processes and mark it paused (idempotent)."""
    await end_processes(root, instance_id)
    (root / MARKER).touch()


def resume(root: Path) -> None:
    """Mark the instance running again (idempotent)."""
    (root / MARKER).unlink(missing_ok=True)


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
