"""What a session's agent changed in its workspace: the recorded instance found again (from any
process) and its working dir compared with the baseline taken at upload or clone time."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from praisonai._errors import ConfigError
from praisonai.compute.workspace import Place, diff, resources
from praisonai.managed.instance._source import reattach


async def reference_diff(reference: Mapping[str, Any] | None, shown: str) -> str:
    """The ``git diff`` of the recorded instance's workspace (``shown`` names the session).

    Raises:
        ConfigError: no instance recorded, or it is gone (its changes with it).
        ExecError: the instance has no baseline (nothing uploaded or cloned) or no git.
    """
    if not reference or not reference.get("instance_id"):
        raise ConfigError(f"session {shown} has no instance yet: nothing to compare", op="diff")
    found = await reattach(reference)
    if found is None:
        raise ConfigError(
            f"session {shown}'s instance {reference['instance_id']} is gone, and its changes with it; "
            "resume the session to get a new one",
            op="diff",
        )
    sandbox, _ = found  # a paused instance is resumed: its files are what the diff reads
    kept = resources(reference.get("resources") or ())
    return await diff(Place(sandbox.provider, sandbox.id), kept[0].mount_path if kept else None)
