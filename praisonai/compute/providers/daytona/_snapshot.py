"""Daytona snapshots: the running sandbox's ``create_snapshot`` (as a capture's,
``_capture.create_snapshot``), a Daytona snapshot named ``praisonai-snapshot-<home>-<id>`` (the
home's tag: ``held`` lists this home's on the account, as docker's labels do); new sandboxes start
from it by name (``CreateSandboxFromSnapshotParams``, the provider's ``_start``), and ``remove``
deletes it on Daytona (``snapshot.delete``).

No env value: Daytona's snapshot keeps the sandbox's filesystem, not its ``env_vars``, and this
provider binds no env after start (``bind_env`` refuses: its exec is one-shot). A sandbox made
from a snapshot takes the snapshot's resources (Daytona applies cpu, memory and gpu only to one
built from an image).

Daytona has no call that rolls a sandbox back to a snapshot: ``restore`` refuses and ``fork(1)``
is the way.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from praisonai._home import home_tag
from praisonai._types import InstanceInfo
from praisonai.compute.abilities.captures import StartFrom
from praisonai.compute.abilities.snapshots import no_restore_in_place
from praisonai.compute.config import ComputeConfig
from praisonai.compute.providers.daytona._capture import create_snapshot
from praisonai.compute.providers.daytona._client import translated

#: How many snapshots one listing call asks Daytona for.
_PAGE = 100


def _prefix() -> str:
    """The names of this home's snapshots start so (read at each call: the home may change)."""
    return f"praisonai-snapshot-{home_tag()}-"


def snapshot_name(snapshot_id: str) -> str:
    return _prefix() + snapshot_id


@dataclass(frozen=True)
class DaytonaSnapshotter:
    """``DaytonaCompute``'s snapshotter (``abilities.snapshots.Snapshotter``), from its SDK
    ``client``, its ``sandbox`` of an instance (for an operation) and its ``start`` of a sandbox
    from a snapshot (the provider's ``_start``, as a capture's)."""

    client: Callable[[], contextlib.AbstractAsyncContextManager[Any]]
    sandbox: Callable[[str, str], contextlib.AbstractAsyncContextManager[Any]]
    start: StartFrom

    async def take(self, instance_id: str, snapshot_id: str) -> int | None:
        await create_snapshot(self.sandbox, instance_id, snapshot_name(snapshot_id), "snapshot")
        return None  # Daytona answers no size at once (its snapshot's ``size`` comes later)

    async def create_from(
        self, instance_id: str, cfg: ComputeConfig, labels: dict[str, str], snapshot_id: str
    ) -> InstanceInfo:
        return await self.start(instance_id, cfg, labels, snapshot_name(snapshot_id))

    async def restore(self, instance_id: str, snapshot_id: str) -> InstanceInfo:
        raise no_restore_in_place(
            "daytona", instance_id, snapshot_id, "it has no call that puts a snapshot into a running sandbox"
        )

    async def remove(self, snapshot_id: str) -> bool:
        from daytona import DaytonaNotFoundError

        async with self.client() as sdk:
            try:
                with translated("remove_snapshot"):
                    await sdk.snapshot.delete(snapshot_name(snapshot_id))
            except DaytonaNotFoundError:
                return False
        return True

    async def held(self) -> list[str]:
        prefix, found, page = _prefix(), [], 1
        async with self.client() as sdk:
            while True:
                with translated("list_snapshots"):
                    listed = await sdk.snapshot.list(page=page, limit=_PAGE)
                found += [s.name.removeprefix(prefix) for s in listed.items if s.name.startswith(prefix)]
                if page >= (listed.total_pages or 1):
                    return sorted(found)
                page += 1
