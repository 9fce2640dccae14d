"""Daytona pause: ``stop`` and ``start`` of the same sandbox (``POST /sandbox/{id}/stop``,
``/start``), its disk kept, its processes ended. Our sandboxes are made with
``auto_delete_interval=0`` (an idle stop deletes them, as every provider's idle instance goes),
so a pause first turns deletion off (``-1``: never) and a resume turns it back on; a stopped
sandbox with deletion off is a paused one (``is_paused``).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

from praisonai._types import InstanceInfo
from praisonai.compute.providers.daytona._client import translated

#: Daytona's auto-delete interval that never deletes a stopped sandbox.
NEVER_DELETE = -1
#: The seconds a stop or start may take before Daytona's SDK gives up.
_WAIT_S = 120


def is_paused(sandbox: Any) -> bool:
    """A stopped sandbox that Daytona keeps: one we paused (ours are deleted when they stop)."""
    return _state(sandbox) == "stopped" and sandbox.auto_delete_interval == NEVER_DELETE


@dataclass(frozen=True)
class DaytonaPauser:
    """``DaytonaCompute``'s pauser (``abilities.pause.Pauser``): ``sandbox(instance_id, op)``
    holds the instance's ``AsyncSandbox`` (a pause or resume never wakes it on the way), ``info``
    reads one."""

    sandbox: Callable[[str, str], AbstractAsyncContextManager[Any]]
    info: Callable[[Any], InstanceInfo]

    async def pause(self, instance_id: str) -> InstanceInfo:
        """Stop the sandbox keeping it; a paused one is returned as it is."""
        async with self.sandbox(instance_id, "pause") as sandbox:
            if not is_paused(sandbox):
                with translated("pause", instance_id=instance_id):
                    await sandbox.set_auto_delete_interval(NEVER_DELETE)  # else the stop deletes it
                    if _state(sandbox) != "stopped":
                        await sandbox.stop(timeout=_WAIT_S)
            return self.info(sandbox)

    async def resume(self, instance_id: str) -> InstanceInfo:
        """Start the paused sandbox (same id, same disk); a running one is returned as it is."""
        async with self.sandbox(instance_id, "resume") as sandbox:
            if is_paused(sandbox):
                with translated("resume", instance_id=instance_id):
                    await sandbox.start(timeout=_WAIT_S)
                    await sandbox.set_auto_delete_interval(0)  # an idle stop deletes it again
            return self.info(sandbox)

    async def paused_disk(self, instance_id: str) -> int | None:
        """``None``: Daytona does not say what a stopped sandbox holds."""
        return None


def _state(sandbox: Any) -> str:
    return str(getattr(sandbox.state, "value", sandbox.state))
