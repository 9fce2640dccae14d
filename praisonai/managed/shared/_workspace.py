"""A SharedCompute's workspace: its resources put in the instance right after it is made (an
instance whose upload or clone failed is removed, never handed out half-ready)."""

from __future__ import annotations

from collections.abc import Sequence

import anyio

from praisonai.compute.base import ComputeProvider
from praisonai.compute.workspace import Place, Resource, diff, prepare
from praisonai.sandbox import AsyncSandbox
from praisonai.sandbox.provisioning import ProvisionPlan


async def prepared(chosen: ProvisionPlan, resources: Sequence[Resource]) -> AsyncSandbox:
    """A new instance made by ``chosen`` with ``resources`` in it; on failure it is shut down
    and the error raised."""
    sandbox = await AsyncSandbox.from_plan(chosen)
    try:
        await prepare(Place(sandbox.provider, sandbox.id), resources)
    except BaseException:
        with anyio.CancelScope(shield=True):
            await sandbox.shutdown()
        raise
    return sandbox


async def diff_of(provider: ComputeProvider, instance_id: str) -> str:
    """The instance's workspace changes (a ``git diff`` patch; see ``sandbox.workspace.diff``)."""
    return await diff(Place(provider, instance_id))
