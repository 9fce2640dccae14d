"""The Modal provider's channel pool: a channel unused for a while is closed.

Modal counts a running exec as activity, so a helper left running would keep a sandbox from ever
reaching its ``idle_timeout``. Each instance's channel is closed once no call has used it for
``linger(instance_id)`` seconds (EOF ends the helper; background processes live on, and the next
call opens a new channel). A call that waits for a command counts as use for as long as it waits.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from praisonai.runtime.channel import Channel
from praisonai.runtime.pool import ChannelPool

T = TypeVar("T")


class LingeringPool(ChannelPool):
    """A :class:`ChannelPool` that closes an instance's channel after ``linger`` idle seconds."""

    def __init__(
        self, open_channel: Callable[[str], Awaitable[Channel]], linger: Callable[[str], float]
    ) -> None:
        super().__init__(open_channel)
        self._linger = linger
        self._lock = threading.Lock()  # timers fire on their own threads
        self._in_use: dict[str, int] = {}
        self._timers: dict[str, threading.Timer] = {}
        self._last: dict[str, float] = {}  # monotonic: when a call last ended

    async def run(self, instance_id: str, call: Callable[[Channel], Awaitable[T]]) -> T:
        with self._lock:
            self._in_use[instance_id] = self._in_use.get(instance_id, 0) + 1
        try:
            return await super().run(instance_id, call)
        finally:
            with self._lock:
                self._in_use[instance_id] -= 1
                self._last[instance_id] = time.monotonic()
                if not self._in_use[instance_id] and instance_id not in self._timers:
                    self._arm(instance_id, self._linger(instance_id))

    def _arm(self, instance_id: str, delay: float) -> None:
        """One timer per instance at most (not one per call): it re-arms itself while in use."""
        timer = threading.Timer(delay, self._expire, (instance_id,))
        timer.daemon = True
        self._timers[instance_id] = timer
        timer.start()

    def _expire(self, instance_id: str) -> None:
        with self._lock:
            if self._timers.get(instance_id) is not threading.current_thread():
                return  # dropped since
            del self._timers[instance_id]
            if self._in_use.get(instance_id):
                return  # the call that ends last arms a new timer
            left = self._last.get(instance_id, 0.0) + self._linger(instance_id) - time.monotonic()
            if left > 0:
                self._arm(instance_id, left)
                return
            channel = self.peek(instance_id)
            if channel is not None:
                channel.close()  # is_open turns False at once: the next call opens a new one

    def drop(self, instance_id: str) -> None:
        with self._lock:
            timer = self._timers.pop(instance_id, None)
        if timer is not None:
            timer.cancel()
        super().drop(instance_id)
