"""E2B snapshots: the running sandbox's ``create_snapshot`` (``POST /sandboxes/{id}/snapshots``),
a named E2B snapshot, ``praisonai-snapshot-<home>-<id>`` (the home's tag: ``held`` lists this
home's on the account); new sandboxes start from its id as their template (as a capture's), and
``remove`` deletes it on E2B (``delete_snapshot``).

Always ``mode="filesystem"``: a full snapshot keeps the sandbox's memory, and with it every env
value its processes hold (envd's from the create, the helper's bound env). A team without
filesystem-only snapshots is refused in one sentence rather than given a full one. The env bound
after start is in the helper's spool (``env``): emptied through the helper for the snapshot and
written back after it with whatever a ``bind_env`` added meanwhile (as on Modal: a helper or
session that starts during the snapshot lacks it; running helpers keep theirs). E2B pauses the
sandbox while it snapshots, so the files are consistent.

E2B has no call that rolls a sandbox back to a snapshot: ``restore`` refuses and ``fork(1)`` is
the way.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from praisonai._errors import ProvisionError, UnsupportedFeatureError
from praisonai._home import home_tag
from praisonai._types import InstanceInfo
from praisonai.compute.abilities.captures import StartFrom
from praisonai.compute.abilities.snapshots import no_restore_in_place
from praisonai.compute.channel import bound_env_left_out
from praisonai.compute.config import ComputeConfig
from praisonai.compute.providers.e2b._capture import snapshot_named
from praisonai.compute.providers.e2b._errors import translated
from praisonai.runtime.pool import ChannelPool

_PREFIX = "praisonai-snapshot-"


def snapshot_name(snapshot_id: str) -> str:
    """The E2B name of snapshot ``snap_<hex>`` of this home (a valid template name: no ``_``)."""
    return f"{_PREFIX}{home_tag()}-{snapshot_id.replace('_', '-')}"


@dataclass(frozen=True)
class E2BSnapshotter:
    """``E2BCompute``'s snapshotter (``abilities.snapshots.Snapshotter``), from its SDK
    ``params``, its connected ``sandbox`` of an instance, its ``start`` of a sandbox from a
    template (as a capture's), its helper ``channels`` and each instance's bound-env file."""

    params: Callable[[], dict[str, Any]]
    sandbox: Callable[[str], Awaitable[Any]]
    start: StartFrom
    channels: ChannelPool
    env_file: Callable[[str], str]

    async def take(self, instance_id: str, snapshot_id: str) -> int | None:
        import e2b

        sandbox = await self.sandbox(instance_id)
        async with bound_env_left_out(self.channels, instance_id, self.env_file(instance_id)):
            try:
                with translated("snapshot", instance_id):
                    await sandbox.create_snapshot(name=snapshot_name(snapshot_id), mode="filesystem")
            except e2b.SandboxException as exc:
                if getattr(exc, "status_code", None) not in (400, 409):
                    raise
                raise UnsupportedFeatureError(
                    f"E2B refused a filesystem-only snapshot of instance {instance_id} ({exc}); "
                    "praisonai takes no full one, whose memory holds env values",
                    op="snapshot",
                ) from exc
        return None  # E2B does not say what a snapshot holds

    async def create_from(
        self, instance_id: str, cfg: ComputeConfig, labels: dict[str, str], snapshot_id: str
    ) -> InstanceInfo:
        return await self.start(instance_id, cfg, labels, await self._id(snapshot_id))

    async def restore(self, instance_id: str, snapshot_id: str) -> InstanceInfo:
        raise no_restore_in_place(
            "e2b", instance_id, snapshot_id, "it has no call that puts a snapshot into a running sandbox"
        )

    async def remove(self, snapshot_id: str) -> bool:
        from e2b import AsyncSandbox

        found = await snapshot_named(self.params(), snapshot_name(snapshot_id), "remove_snapshot")
        if found is None:
            return False
        with translated("remove_snapshot"):
            return bool(await AsyncSandbox.delete_snapshot(found, **self.params()))

    async def held(self) -> list[str]:
        from e2b import AsyncSandbox

        prefix, found = f"{_PREFIX}{home_tag()}-snap-", set()
        with translated("list_snapshots"):
            pages = AsyncSandbox.list_snapshots(**self.params())
            while pages.has_next:
                for snapshot in await pages.next_items():
                    found |= {
                        "snap_" + n.removeprefix(prefix) for n in snapshot.names if n.startswith(prefix)
                    }
        return sorted(found)

    async def _id(self, snapshot_id: str) -> str:
        found = await snapshot_named(self.params(), snapshot_name(snapshot_id), "provision")
        if found is None:
            raise ProvisionError(
                f"E2B no longer has snapshot {snapshot_id}; remove it (praisonai.compute.remove_snapshot)",
                op="provision",
            )
        return found
