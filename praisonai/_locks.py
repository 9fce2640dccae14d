"""Cross-process locks: a flock on a file under ``$PRAISONAI_HOME/locks``. The holder writes who
it is into the file, so that a process that waits too long can say whom it waited for."""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import os
import re
import sys
from collections.abc import AsyncIterator, Callable

import anyio

from praisonai._errors import LockTimeoutError
from praisonai._home import praisonai_home
from praisonai._limits import LOCK_WAIT_S

#: Seconds between two tries of a held lock: short at first, then at most the last.
_POLL_S = (0.01, 0.02, 0.05, 0.1, 0.2)


@contextlib.asynccontextmanager
async def file_lock(
    name: str, *, wait_s: float = LOCK_WAIT_S, waiting: Callable[[str], None] | None = None
) -> AsyncIterator[None]:
    """Hold the lock ``name`` for the block, against every process (and task) of this home.

    ``flock`` locks belong to an open file, so two tasks of one process exclude each other too.
    The wait polls (it can be cancelled: Ctrl-C does not wait for the holder); ``waiting`` is told
    who holds it (``process 123 (name)``) once, when the lock is not free at once.

    Raises:
        LockTimeoutError: another process held it for ``wait_s`` seconds (named in the message).
    """
    fd = os.open(_lock_path(name), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        with anyio.move_on_after(wait_s):
            for tried in itertools.count():
                if _take(fd):
                    break
                if tried == 0 and waiting is not None:
                    waiting(_holder(fd))
                await anyio.sleep(_POLL_S[min(tried, len(_POLL_S) - 1)])
        if not _held_by_us(fd):
            raise LockTimeoutError(
                f"waited {wait_s:g}s for the lock {name!r}, held by {_holder(fd)}; "
                "try again once it is done, or end that process",
                op="lock",
            )
        _sign(fd)
        yield
    finally:
        os.close(fd)  # closing the file releases the lock


def try_lock(name: str) -> int | None:
    """Take the lock ``name`` now, without waiting: its open file descriptor (closing it, in this
    process and in every child it was passed to, releases the lock), or ``None`` when another
    process or task holds it."""
    fd = os.open(_lock_path(name), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        if not _take(fd):
            os.close(fd)
            return None
        _sign(fd)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _take(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _held_by_us(fd: int) -> bool:
    """Whether ``fd`` holds its lock (flock again on the same open file is a no-op that succeeds)."""
    return _take(fd)


def _sign(fd: int) -> None:
    """Write who holds the lock: the process id and its program, never its other arguments
    (a prompt, a token)."""
    program = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "python"
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"process {os.getpid()} ({program[:60]})".encode(), 0)


def _holder(fd: int) -> str:
    said = os.pread(fd, 200, 0).decode(errors="replace").strip()
    return said if re.fullmatch(r"process \d+ \([^()]*\)", said) else "another process"


def _lock_path(name: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9._-]+", name):
        raise ValueError(f"bad lock name {name!r}")
    folder = praisonai_home() / "locks"
    folder.mkdir(exist_ok=True)
    return str(folder / f"{name}.lock")
