"""E2B's native pause: ``AsyncSandbox.pause`` (``POST /sandboxes/{id}/pause``; memory and
filesystem kept, up to 30 days) and resume by ``connect`` (``POST /v2/sandboxes/{id}/connect``),
which E2B answers by resuming a paused sandbox under the same sandbox id. Every use of a paused
instance connects again (the provider forgets its connections when it pauses), so the next
command or file call resumes it too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from praisonai._errors import InstanceNotFoundError
from praisonai._types import InstanceInfo, InstanceStatus
from praisonai.compute.providers.e2b._errors import translated
from praisonai.compute.providers.e2b._meta import info_of

if TYPE_CHECKING:
    from praisonai.compute.providers.e2b import E2BCompute


async def pause(provider: E2BCompute, instance_id: str) -> InstanceInfo:
    """Pause the instance's sandbox; a paused one stays paused (E2B answers 409: ``False``)."""
    from e2b import AsyncSandbox

    found = await provider._lookup(instance_id)
    if found is None:
        raise InstanceNotFoundError(f"no e2b instance {instance_id!r}", op="pause")
    sandbox_id, metadata = found
    provider._disconnect(instance_id)  # E2B drops a paused sandbox's connections
    with translated("pause", instance_id):
        await AsyncSandbox.pause(sandbox_id, **provider._params())
    return info_of(instance_id, sandbox_id, metadata, InstanceStatus.PAUSED)


async def resume(provider: E2BCompute, instance_id: str) -> InstanceInfo:
    """Resume a paused sandbox by connecting to it (renewed for the idle limit, never past the
    ttl); a running one is returned as it is, its connections kept."""
    info = await provider._status(instance_id)
    if info.status is InstanceStatus.RUNNING:
        return info
    provider._disconnect(instance_id)  # paused by another process: what we held is stale
    sandbox = await provider._sandbox(instance_id)  # connect() resumes it
    return info_of(instance_id, sandbox.sandbox_id, provider._metadata[instance_id], InstanceStatus.RUNNING)
