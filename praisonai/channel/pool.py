"""One open channel per instance for a provider, reopened on demand when it has closed."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio

from praisonai._errors import ChannelClosedError
from praisonai.channel.channel import Channel

T = TypeVar("T")


class ChannelPool:
    """Opens channels with ``open_channel(instance_id)``; ``run`` retries once on a fresh channel
    when the helper was gone before it answered (the request did not run)."""

    def __init__(self, open_channel: Callable[[str], Awaitable[Channel]]) -> None:
        self._open_channel = open_channel
        self._channels: dict[str, Channel] = {}
        self._locks: dict[tuple[str, int], anyio.Lock] = {}

    async def get(self, instance_id: str) -> Channel:
        channel = self._channels.get(instance_id)
        if channel is not None and channel.is_open:
            return channel
        # one opener per instance (and event loop): 200 first calls share one helper
        key = (instance_id, id(asyncio.get_running_loop()))
        async with self._locks.setdefault(key, anyio.Lock()):
            channel = self._channels.get(instance_id)
            if channel is None or not channel.is_open:
                if channel is not None:
                    channel.close()
                channel = self._channels[instance_id] = await self._open_channel(instance_id)
            return channel

    async def run(self, instance_id: str, call: Callable[[Channel], Awaitable[T]]) -> T:
        try:
            return await call(await self.get(instance_id))
        except ChannelClosedError as exc:
            if exc.sent:
                raise
        return await call(await self.get(instance_id))

    def peek(self, instance_id: str) -> Channel | None:
        """The instance's channel if one is open now (never opens one)."""
        channel = self._channels.get(instance_id)
        return channel if channel is not None and channel.is_open else None

    def drop(self, instance_id: str) -> None:
        """Forget (and close) the instance's channel, e.g. because the instance was removed."""
        channel = self._channels.pop(instance_id, None)
        for key in [k for k in self._locks if k[0] == instance_id]:
            del self._locks[key]
        if channel is not None:
            channel.close()
