"""Background processes on E2B: the helper channel's, but their output read from its spool file
through envd's files API, which is binary-safe where the channel's output is not (``_channel``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal

from praisonai.compute.channel import ChannelProcesses
from praisonai.compute.providers.e2b import _files
from praisonai.runtime import processes
from praisonai.runtime.pool import ChannelPool


class E2BProcesses(ChannelProcesses):
    """The channel's processes part, built also from the provider's connected ``sandbox`` lookup
    and its helper's ``spool`` directory, where a process's output is read from."""

    def __init__(
        self,
        channels: ChannelPool,
        cwd: Callable[[str, str | None], Awaitable[str]],
        sandbox: Callable[[str], Awaitable[Any]],
        spool: Callable[[str], str],
    ) -> None:
        super().__init__(channels, cwd)
        self._sandbox, self._spool = sandbox, spool

    async def output(
        self, instance_id: str, process_id: str, stream: Literal["out", "err"], offset: int, limit: int | None
    ) -> bytes:
        sandbox = await self._sandbox(instance_id)
        path = processes.process_file(self._spool(instance_id), process_id, stream)
        return await _files.read_range(sandbox, instance_id, path, max(0, offset), limit)
