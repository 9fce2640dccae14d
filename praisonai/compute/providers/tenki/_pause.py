"""Tenki's native pause: ``AsyncSandbox.pause()`` (``PauseSession``, synchronous: it returns
paused) and ``resume()`` (``ResumeSession``) of the same sandbox. Tenki keeps memory and disk,
so processes survive, but clears ``/tmp`` on resume: what lives there (the spool of background
processes, ``compute.oneshot.SPOOL``) is gone after a resume, while the working dir is kept.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from praisonai._types import InstanceInfo
from praisonai.compute.providers.tenki._client import translated

if TYPE_CHECKING:
    from praisonai.compute.providers.tenki import TenkiCompute


async def pause(provider: TenkiCompute, instance_id: str) -> InstanceInfo:
    """Pause the sandbox; a paused (or pausing) one is returned as it is."""
    async with provider._sandbox(instance_id, "pause", fresh=True) as sandbox:
        if sandbox.state not in ("PAUSED", "PAUSING"):
            with translated("pause", instance_id=instance_id):
                await sandbox.pause()
        return provider._info(sandbox)


async def resume(provider: TenkiCompute, instance_id: str) -> InstanceInfo:
    """Resume a paused sandbox (same id); a running one is returned as it is."""
    async with provider._sandbox(instance_id, "resume", fresh=True) as sandbox:
        if sandbox.state == "PAUSED":
            with translated("resume", instance_id=instance_id):
                await sandbox.resume()
        return provider._info(sandbox)
