"""A compute provider written the way a PraisonAI user writes one, to its duck-typed
``ComputeProviderProtocol``: nothing of ours is imported. Each instance is a directory of its
own; ``execute`` really runs the command (``sh -c``, asyncio subprocess) and returns PraisonAI's
result dict. Instances are found by id in this object only.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import uuid
from dataclasses import dataclass, field
from typing import Any


@dataclass
class InstanceInfo:
    """What PraisonAI's ``provision`` returns (its ``managed.protocols.InstanceInfo``, trimmed)."""

    instance_id: str = ""
    status: str = "running"
    provider: str = "subprocess"
    metadata: dict[str, Any] = field(default_factory=dict)


class SubprocessCompute:
    provider_name = "subprocess"

    def __init__(self) -> None:
        self.roots: dict[str, str] = {}
        self.configs: list[Any] = []
        self.commands: list[str] = []
        self.shutdowns: list[str] = []

    @property
    def is_available(self) -> bool:
        return True

    async def provision(self, config: Any) -> InstanceInfo:
        self.configs.append(config)
        instance_id = f"sub-{uuid.uuid4().hex[:8]}"
        self.roots[instance_id] = tempfile.mkdtemp(prefix="user-compute-")
        return InstanceInfo(instance_id=instance_id, metadata={"root": self.roots[instance_id]})

    async def execute(self, instance_id: str, command: str, timeout: float | None = None) -> dict[str, Any]:
        self.commands.append(command)
        process = await asyncio.create_subprocess_exec(
            "sh", "-c", command, cwd=self.roots[instance_id],
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        try:
            out, err = await asyncio.wait_for(process.communicate(), timeout)
        except asyncio.TimeoutError:
            process.kill()
            await process.wait()
            return {"stdout": "", "stderr": "timed out", "exit_code": -1}
        return {"stdout": out.decode(errors="replace"), "stderr": err.decode(errors="replace"),
                "exit_code": process.returncode}  # fmt: skip

    async def shutdown(self, instance_id: str) -> None:
        self.shutdowns.append(instance_id)
        shutil.rmtree(self.roots.pop(instance_id), ignore_errors=True)

    def close(self) -> None:
        """What the tests call last, whatever happened: every instance's directory goes."""
        for root in self.roots.values():
            shutil.rmtree(root, ignore_errors=True)
        self.roots.clear()
