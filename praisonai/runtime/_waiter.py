"""A value handed from a transport's reader thread to the event loop that waits for it."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any


class Waiter:
    """A value delivered from the reader thread into the event loop that is waiting for it."""

    __slots__ = ("_future", "_loop")

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._future: asyncio.Future[Any] = self._loop.create_future()

    def resolve(self, value: Any) -> None:
        def set_result() -> None:
            if not self._future.done():
                self._future.set_result(value)

        with contextlib.suppress(RuntimeError):  # the waiting loop has closed; nobody is left to tell
            self._loop.call_soon_threadsafe(set_result)

    @property
    def done(self) -> bool:
        return self._future.done()

    async def wait(self) -> Any:
        # shield: a timed-out wait must leave the future intact for the next wait on it
        return await asyncio.shield(self._future)
