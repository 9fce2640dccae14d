"""Background processes on local: the helper channel's, with bound env kept in the instance's
record too, since local's commands are direct spawns (not the helper's jobs) and take their env
from it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from praisonai.compute.channel import ChannelProcesses
from praisonai.runtime.pool import ChannelPool


class LocalProcesses(ChannelProcesses):
    """The channel's processes part, built also from the provider's ``record`` (which adds env to
    an instance's record), called before the helper binds it."""

    def __init__(
        self,
        channels: ChannelPool,
        cwd: Callable[[str, str | None], Awaitable[str]],
        record: Callable[[str, Mapping[str, str]], Awaitable[None]],
    ) -> None:
        super().__init__(channels, cwd)
        self._record = record

    async def bind_env(self, instance_id: str, env: Mapping[str, str]) -> None:
        await self._record(instance_id, env)
        await super().bind_env(instance_id, env)
