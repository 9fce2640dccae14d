"""Worker threads for blocking SDK calls (docker-py, paramiko), shared by the providers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.to_thread
from anyio.lowlevel import RunVar

T = TypeVar("T")

# Blocking calls (and readers of exec streams, which wait on output) each hold a worker thread;
# anyio's default of 40 would let 40 slow readers starve the call that kills them.
_THREADS: RunVar[anyio.CapacityLimiter] = RunVar("praisonai_threads")


def _limiter() -> anyio.CapacityLimiter:
    try:
        return _THREADS.get()
    except LookupError:
        limiter = anyio.CapacityLimiter(256)
        _THREADS.set(limiter)
        return limiter


async def run_blocking(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in a worker thread of the current event loop's shared pool."""
    return await anyio.to_thread.run_sync(fn, *args, limiter=_limiter())
