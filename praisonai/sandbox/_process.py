"""The async handle of a background process (``AsyncSandbox.start``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from praisonai._types import ProcessInfo

if TYPE_CHECKING:  # annotations only: keeps ``from praisonai import Sandbox`` light
    from praisonai.compute.base import ComputeProvider


class AsyncProcess:
    """A background process in an instance; find it again from anywhere with its ``id``."""

    def __init__(self, provider: ComputeProvider, instance_id: str, info: ProcessInfo) -> None:
        self.provider = provider
        self.instance_id = instance_id
        self.info = info

    @property
    def id(self) -> str:
        return self.info.process_id

    async def status(self) -> ProcessInfo:
        """Fresh state: running, exited (with ``exit_code``) or lost."""
        self.info = await self.provider.processes.get(self.instance_id, self.id)
        return self.info

    async def logs(
        self, stream: Literal["stdout", "stderr"] = "stdout", *, offset: int = 0, limit: int | None = None
    ) -> bytes:
        """Its output from byte ``offset`` — poll with a growing offset to follow it."""
        return await self.provider.processes.output(
            self.instance_id, self.id, stream=stream, offset=offset, limit=limit
        )

    async def wait(self, timeout: float | None = None) -> ProcessInfo:
        """Wait for it to end (at most ``timeout`` seconds) and return its state."""
        self.info = await self.provider.processes.wait(self.instance_id, self.id, timeout)
        return self.info

    async def kill(self) -> None:
        """Kill it and everything it started."""
        await self.provider.processes.kill(self.instance_id, self.id)

    def __repr__(self) -> str:
        return f"<Process {self.id} {self.info.state} {self.info.command!r}>"
