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
    fd = os.open(_lock_path(name), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        await anyio.to_thread.run_sync(fcntl.flock, fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the file releases the lock


def try_lock(name: str) -> int | None:
    """Take the lock ``name`` now, without waiting: its open file descriptor (closing it, in this
    process and in every child it was passed to, releases the lock), or ``None`` when another
    process or task holds it."""
    fd = os.open(_lock_path(name), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return fd


def _lock_path(name: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9._-]+", name):
        raise ValueError(f"bad lock name {name!r}")
    folder = praisonai_home() / "locks"
    folder.mkdir(exist_ok=True)
    return str(folder / f"{name}.lock")
