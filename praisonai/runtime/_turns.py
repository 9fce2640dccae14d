"""Turns at a session's shell, first come first served, for callers on any thread or event loop."""

from __future__ import annotations

import collections
import threading

import anyio

from praisonai.runtime._waiter import Waiter


class Turns:
    """Turns at the shell, first come first served, for callers on any thread or event loop."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: collections.deque[Waiter] = collections.deque()
        self._taken = False

    async def take(self, timeout: float | None) -> bool:
        """Wait for the turn; False when ``timeout`` passed first (then nothing is held)."""
        with self._lock:
            if not self._taken:
                self._taken = True
                return True
            waiter = Waiter()
            self._waiting.append(waiter)
        try:
            with anyio.move_on_after(timeout):
                await waiter.wait()
                return True
        except BaseException:
            self._withdraw(waiter)
            raise
        self._withdraw(waiter)
        return False

    def give_back(self) -> None:
        """Hand the turn to the longest waiter, or free it."""
        with self._lock:
            if self._waiting:
                self._waiting.popleft().resolve(None)  # the turn stays taken: it passes on
            else:
                self._taken = False

    def _withdraw(self, waiter: Waiter) -> None:
        with self._lock:
            if waiter in self._waiting:
                self._waiting.remove(waiter)
                return
        self.give_back()  # it was handed to this waiter meanwhile: pass it on
