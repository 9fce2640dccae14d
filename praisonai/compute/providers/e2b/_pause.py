"""E2B's native pause: ``AsyncSandbox.pause`` (``POST /sandboxes/{id}/pause``; memory and
filesystem kept, up to 30 days) and resume by ``connect`` (``POST /v2/sandboxes/{id}/connect``),
which E2B answers by resuming a paused sandbox under the same sandbox id. Every use of a paused
instance connects again (the provider forgets its connections when it pauses), so the next
command or file call resumes it too.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from praisonai._errors import InstanceNotFoundError
from praisonai._types import InstanceInfo, InstanceStatus
from praisonai.compute.providers.e2b._errors import translated
from praisonai.compute.providers.e2b._meta import info_of


@dataclass(frozen=True)
class E2BPauser:
    """``E2BCompute``'s pauser (``abilities.pause.Pauser``), from the provider's ways to its
    sandboxes: ``lookup`` (an instance's sandbox id and metadata, or ``None``), ``connect`` (the
    connected sandbox: connecting resumes a paused one), ``status``, ``disconnect`` (forget this
    process's connections) and ``params`` (the SDK's ``ApiParams``)."""

    lookup: Callable[[str], Awaitable[tuple[str, dict[str, str]] | None]]
    connect: Callable[[str], Awaitable[Any]]
    status: Callable[[str], Awaitable[InstanceInfo]]
    disconnect: Callable[[str], None]
    params: Callable[[], dict[str, Any]]

    async def pause(self, instance_id: str) -> InstanceInfo:
        """Pause the instance's sandbox; a paused one stays paused (E2B answers 409: ``False``)."""
        from e2b import AsyncSandbox

        sandbox_id, metadata = await self._found(instance_id, "pause")
        self.disconnect(instance_id)  # E2B drops a paused sandbox's connections
        with translated("pause", instance_id):
            await AsyncSandbox.pause(sandbox_id, **self.params())
        return info_of(instance_id, sandbox_id, metadata, InstanceStatus.PAUSED)

    async def resume(self, instance_id: str) -> InstanceInfo:
        """Resume a paused sandbox by connecting to it (renewed for the idle limit, never past the
        ttl); a running one is returned as it is, its connections kept."""
        info = await self.status(instance_id)
        if info.status is InstanceStatus.RUNNING:
            return info
        self.disconnect(instance_id)  # paused by another process: what we held is stale
        await self.connect(instance_id)  # connect() resumes it
        sandbox_id, metadata = await self._found(instance_id, "resume")  # the connected one's
        return info_of(instance_id, sandbox_id, metadata, InstanceStatus.RUNNING)

    async def paused_disk(self, instance_id: str) -> int | None:
        """``None``: E2B does not say what a paused sandbox holds."""
        return None

    async def _found(self, instance_id: str, op: str) -> tuple[str, dict[str, str]]:
        found = await self.lookup(instance_id)
        if found is None:
            raise InstanceNotFoundError(f"no e2b instance {instance_id!r}", op=op)
        return found
