"""One open channel per instance for a provider, reopened on demand when it has closed."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio

from praisonai._errors import ChannelClosedError, ExecError
from praisonai._types import ExecResult
from praisonai.runtime._job import JobInterrupted
from praisonai.runtime.channel import Channel

T = TypeVar("T")


class ChannelPool:
    """Opens channels with ``open_channel(instance_id)``.

    ``run`` keeps the at-most-once rule: a call is repeated on a fresh channel only when its
    request provably never reached the helper or only reads (``ChannelClosedError.sent`` False).
    An exec whose job was sent is resumed on the fresh channel from the spool by its job id
    instead: the caller gets its true result, or ``ChannelClosedError`` saying it may have run.
    """

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
        except JobInterrupted as interrupted:
            return await self._resume(instance_id, interrupted)  # type: ignore[return-value]
        except ChannelClosedError as exc:
            if exc.sent:
                raise
        return await call(await self.get(instance_id))

    async def _resume(self, instance_id: str, interrupted: JobInterrupted) -> ExecResult:
        unknown: Exception
        try:
            channel = await self.get(instance_id)
        except Exception as exc:  # the instance is gone or unreachable: no verdict on the job
            unknown = exc
        else:
            try:
                return await interrupted.job.resume(channel)
            except ChannelClosedError as exc:
                if exc.sent:
                    raise  # the verdict on the job: it may have run
                unknown = exc  # the new channel closed too
            except ExecError:
                raise  # the verdict on the job: it ran, and its output is lost
            except Exception as exc:
                unknown = exc
        # the fate stays unknown, and a caller must not take this for "safe to repeat"
        raise ChannelClosedError(
            f"{interrupted}; the command may have run, and its result could not be recovered: {unknown}",
            op="exec",
            sent=True,
        ) from unknown

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
