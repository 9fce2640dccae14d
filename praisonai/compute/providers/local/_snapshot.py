"""Local snapshots: a copy of the instance's workspace, ``cp -a --reflink=auto`` (copy-on-write
where the filesystem has reflinks: btrfs, XFS; a plain copy elsewhere), in a directory of its own,
``$PRAISONAI_HOME/snapshots/local/<id>/workspace`` (mode 0700). Under bubblewrap too: its
workspace is the same directory on this host.

Only the workspace is copied: never the instance's record (which holds env values) nor its spool
(the bound env), so no env value is in a snapshot. ``cp -a`` copies links as links and follows none,
the workspace itself included: nothing outside the instance is read. Each file is copied whole as
it is when ``cp`` opens it: a file replaced by a rename meanwhile is copied as one version or the
other, never a mix (a file rewritten in place while it is copied may be caught mid-write, as any
copy would).

An instance can be rolled back in place: ``restore`` ends its processes (as a pause does) and puts
a copy of the snapshot where its workspace was, under the same id.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import anyio.to_thread

from praisonai._errors import ProvisionError
from praisonai._home import praisonai_home
from praisonai._types import InstanceInfo
from praisonai.compute.config import ComputeConfig
from praisonai.compute.providers.local._pause import disk, end_processes
from praisonai.compute.providers.local._record import Instance
from praisonai.runtime.pool import ChannelPool

#: Where a copy is put before it takes the workspace's place (a restore), or is removed (a failure).
_PARTIAL = ".partial"


def snapshots_root() -> Path:
    """Where this home's local snapshots live (read at each call: the home may change)."""
    return praisonai_home() / "snapshots" / "local"


#: cp's word for a file that was in a directory it listed and gone when it came to copy it.
_VANISHED = re.compile(r"cp: cannot (?:stat|open) '.*': No such file or directory")


def copy_tree(source: Path, target: Path) -> None:
    """Copy the directory ``source`` to ``target`` (which must not exist), links as links,
    reflinked where the filesystem can; a failed copy leaves nothing at ``target``."""
    partial = target.with_name(target.name + _PARTIAL)
    shutil.rmtree(partial, ignore_errors=True)
    done = subprocess.run(
        ["cp", "-a", "--reflink=auto", "--no-target-directory", "--", str(source), str(partial)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "LC_ALL": "C"},  # cp's own words, matched below
    )
    said = done.stderr.splitlines()
    # The workspace is live: a file its commands removed or renamed away while cp walked it is
    # simply not in the copy (the rename's target is, whole), as if taken a moment later.
    vanished = said and all(_VANISHED.fullmatch(line) for line in said)
    if done.returncode != 0 and not (vanished and partial.is_dir()):  # not the workspace itself
        shutil.rmtree(partial, ignore_errors=True)
        raise ProvisionError(f"could not copy the workspace: {done.stderr.strip()}", op="snapshot")
    os.rename(partial, target)


@dataclass(frozen=True)
class LocalSnapshotter:
    """``LocalCompute``'s snapshotter (``abilities.snapshots.Snapshotter``): ``load`` finds an
    instance's record (``InstanceNotFoundError`` when there is none), ``create`` makes an empty
    instance (the provider's ``_create``), ``channels`` are the provider's."""

    load: Callable[[str], Instance]
    create: Callable[[str, ComputeConfig, dict[str, str]], Awaitable[InstanceInfo]]
    channels: ChannelPool

    async def take(self, instance_id: str, snapshot_id: str) -> int | None:
        inst = self.load(instance_id)
        folder = snapshots_root() / snapshot_id
        await anyio.to_thread.run_sync(_make_folder, folder)
        try:
            await anyio.to_thread.run_sync(copy_tree, inst.workspace, folder / "workspace")
        except BaseException:
            await anyio.to_thread.run_sync(shutil.rmtree, folder, True)
            raise
        return await disk(folder / "workspace")

    async def create_from(
        self, instance_id: str, cfg: ComputeConfig, labels: dict[str, str], snapshot_id: str
    ) -> InstanceInfo:
        info = await self.create(instance_id, cfg, labels)
        workspace = self.load(instance_id).workspace
        await anyio.to_thread.run_sync(_replace, workspace, _saved(snapshot_id))
        return info

    async def restore(self, instance_id: str, snapshot_id: str) -> InstanceInfo:
        inst = self.load(instance_id)
        saved = _saved(snapshot_id)  # before anything ends: a missing snapshot changes nothing
        self.channels.drop(instance_id)
        await end_processes(inst.root, instance_id)
        await anyio.to_thread.run_sync(_replace, inst.workspace, saved)
        return inst.info()

    async def remove(self, snapshot_id: str) -> bool:
        folder = snapshots_root() / snapshot_id
        if not folder.is_dir():
            return False
        await anyio.to_thread.run_sync(shutil.rmtree, folder, True)
        return True

    async def held(self) -> list[str]:
        root = snapshots_root()
        return sorted(entry.name for entry in root.iterdir() if entry.is_dir()) if root.is_dir() else []


def _make_folder(folder: Path) -> None:
    folder.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    folder.mkdir(mode=0o700)


def _saved(snapshot_id: str) -> Path:
    """The snapshot's workspace copy; one sentence when its provider holds it no more."""
    saved = snapshots_root() / snapshot_id / "workspace"
    if not saved.is_dir():
        raise ProvisionError(
            f"snapshot {snapshot_id} is recorded but its copy {saved} is gone; remove it "
            "(praisonai.compute.remove_snapshot)",
            op="snapshot",
        )
    return saved


def _replace(workspace: Path, saved: Path) -> None:
    """Put a copy of ``saved`` where ``workspace`` is: copied beside it first, then swapped in."""
    fresh = workspace.with_name("workspace.restored")
    shutil.rmtree(fresh, ignore_errors=True)
    copy_tree(saved, fresh)
    old = workspace.with_name("workspace.old")
    shutil.rmtree(old, ignore_errors=True)
    os.rename(workspace, old)
    os.rename(fresh, workspace)
    shutil.rmtree(old, ignore_errors=True)
