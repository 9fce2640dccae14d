"""Cross-process locks: a flock on a file under ``$PRAISONAI_HOME/locks``."""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
from collections.abc import AsyncIterator

import anyio
import anyio.to_thread

from praisonai._home import praisonai_home


@contextlib.asynccontextmanager
async def file_lock(name: str) -> AsyncIterator[None]:
    """Hold the lock ``name`` for the block, against every process (and task) of this home.

    ``flock`` locks belong to an open file, so two tasks of one process exclude each other too.
    The wait happens in a worker thread; the event loop keeps running.
    """
    if not re.fullmatch(r"[A-Za-z0-9._-]+", name):
        raise ValueError(f"bad lock name {name!r}")
    folder = praisonai_home() / "locks"
    folder.mkdir(exist_ok=True)
    fd = os.open(folder / f"{name}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        await anyio.to_thread.run_sync(fcntl.flock, fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the file releases the lock
