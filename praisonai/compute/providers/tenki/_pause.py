"""Tenki's native pause: ``AsyncSandbox.pause()`` (``PauseSession``, synchronous: it returns
paused) and ``resume()`` (``ResumeSession``) of the same sandbox. Tenki keeps memory and disk,
so processes survive, but clears ``/tmp`` on resume: what lives there (the spool of background
processes, ``compute.oneshot.SPOOL``) is gone after a resume, while the working dir is kept.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

from praisonai._types import InstanceInfo
from praisonai.compute.providers.tenki._client import translated


@dataclass(frozen=True)
class TenkiPauser:
    """``TenkiCompute``'s pauser (``abilities.pause.Pauser``): ``sandbox(instance_id, op)`` holds
    the instance's ``AsyncSandbox`` as it is now (never resumed on the way), ``info`` reads one."""

    sandbox: Callable[[str, str], AbstractAsyncContextManager[Any]]
    info: Callable[[Any], InstanceInfo]

    async def pause(self, instance_id: str) -> InstanceInfo:
        """Pause the sandbox; a paused (or pausing) one is returned as it is."""
        async with self.sandbox(instance_id, "pause") as sandbox:
            if sandbox.state not in ("PAUSED", "PAUSING"):
                with translated("pause", instance_id=instance_id):
                    await sandbox.pause()
            return self.info(sandbox)

    async def resume(self, instance_id: str) -> InstanceInfo:
        """Resume a paused sandbox (same id); a running one is returned as it is."""
        async with self.sandbox(instance_id, "resume") as sandbox:
            if sandbox.state == "PAUSED":
                with translated("resume", instance_id=instance_id):
                    await sandbox.resume()
            return self.info(sandbox)

    async def paused_disk(self, instance_id: str) -> int | None:
        """``None``: Tenki does not say what a paused sandbox holds."""
        return None
