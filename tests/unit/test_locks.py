"""Cross-process locks: a wait that ends, with a sentence naming the holder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from praisonai._errors import LockTimeoutError
from praisonai._locks import file_lock, try_lock

_HOLD = (
    "from praisonai._locks import try_lock; import time; try_lock('x'); print(1, flush=True); time.sleep(60)"
)


def test_a_held_lock_times_out_naming_its_holder(home: Path) -> None:
    """Another process holds it: the wait ends after ``wait_s`` with its pid and program."""
    holder = subprocess.Popen([sys.executable, "-c", _HOLD], stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"1\n"

        told: list[str] = []

        async def wait() -> None:
            async with file_lock("x", wait_s=0.3, waiting=told.append):
                pass

        with pytest.raises(LockTimeoutError, match=rf"lock 'x', held by process {holder.pid} \(-c\)"):
            anyio.run(wait)
        assert told == [f"process {holder.pid} (-c)"]  # once, at the start of the wait
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()


def test_a_lock_freed_while_waiting_is_taken(home: Path) -> None:
    fd = try_lock("y")
    assert fd is not None and try_lock("y") is None

    async def free_soon() -> None:
        await anyio.sleep(0.2)
        os.close(fd)

    async def wait() -> bool:
        async with anyio.create_task_group() as tg:
            tg.start_soon(free_soon)
            async with file_lock("y", wait_s=5):
                return True

    assert anyio.run(wait)
