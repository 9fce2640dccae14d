"""Background processes: started, read, waited for and killed by id from any process.

Turned on by ``Capability.PROCESSES``; the channel mixin (``praisonai.compute.channel``) brings
them to every provider with a byte stream. Without it each method refuses with one sentence.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import anyio

from praisonai._limits import check_timeout
from praisonai._types import Capability, ProcessInfo
from praisonai.compute.abilities._refusal import Refusal


class Processes(Refusal):
    """The background-process methods of the provider contract."""

    async def start_process(
        self, instance_id: str, command: str, *, cwd: str | None = None, env: Mapping[str, str] | None = None
    ) -> ProcessInfo:
        """Start ``command`` in the background and return at once. Its output is spooled inside
        the instance, so any process can read it, wait for it or kill it later by its id."""
        raise self._unsupported("background processes", "process", Capability.PROCESSES)

    async def list_processes(self, instance_id: str) -> list[ProcessInfo]:
        """Every background process started in the instance, by any client."""
        raise self._unsupported("background processes", "process", Capability.PROCESSES)

    async def get_process(self, instance_id: str, process_id: str) -> ProcessInfo:
        """The background process's state (output, wait and kill look it up here first)."""
        raise self._unsupported("background processes", "process", Capability.PROCESSES)

    async def read_process_output(
        self,
        instance_id: str,
        process_id: str,
        *,
        stream: Literal["stdout", "stderr"] = "stdout",
        offset: int = 0,
        limit: int | None = None,
    ) -> bytes:
        """The process's output from byte ``offset`` (at most ``limit`` bytes), while it runs or after."""
        raise self._unsupported("background processes", "process", Capability.PROCESSES)

    async def wait_process(
        self, instance_id: str, process_id: str, timeout: float | None = None
    ) -> ProcessInfo:
        """Wait until the process ends (or ``timeout`` passes) and return its state (polled
        through ``get_process``, backing off to twice a second)."""
        delay = 0.01
        with anyio.move_on_after(check_timeout(timeout)):
            while (info := await self.get_process(instance_id, process_id)).running:
                await anyio.sleep(delay)
                delay = min(delay * 2, 0.5)
            return info
        return await self.get_process(instance_id, process_id)

    async def kill_process(self, instance_id: str, process_id: str) -> None:
        """Kill the process and everything it started; idempotent."""
        raise self._unsupported("background processes", "process", Capability.PROCESSES)
