"""Filling a shared warm pool, in this process or in a detached short-lived child.

:func:`fill` records the pool's size and value-free definition in the ledger, then provisions
what the pool lacks, under the pool's lock (``$PRAISONAI_HOME/locks/warm-<id>.lock``), so that
concurrent fills and refills never overshoot. Each new instance is provisioned without env values
and offered to every process of the home (state ``warm``, with its main channel's handoff key);
this process then lets go of it (no reaping, no channel opened): the instance's own watchdog
(docker) or the home's reaper stops it at its idle limit or ttl, as any other.

:func:`start_refill` is what a claimer calls: when no refill of the pool runs, it takes the lock
and hands it to ``python -m praisonai.compute.warm POOL_ID LOCK_FD``, which tops the pool up and
exits; the claimer does not wait. A refill that finds the pool short again once it let go of the
lock (claims came meanwhile) takes it again, so a claim that found the lock held is not missed.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import anyio.to_thread

from praisonai._home import praisonai_home
from praisonai._ledger import Ledger
from praisonai._limits import LOG_MAX_BYTES, REFILL_START_WAIT_S, WARM_FILL_CONCURRENCY, WARM_REFILL_ROUNDS
from praisonai._locks import file_lock, try_lock
from praisonai.compute import _activity
from praisonai.compute.base import ComputeProvider
from praisonai.compute.config import ComputeConfig
from praisonai.compute.lifecycle import owner_tag
from praisonai.compute.registry import provider_for_record
from praisonai.compute.warm import _rows
from praisonai.compute.warm._rows import Pool

log = logging.getLogger("praisonai.warm")


def lock_name(pool_id: int) -> str:
    return f"warm-{pool_id}"


async def fill(provider: ComputeProvider, config: ComputeConfig, size: int) -> int:
    """Record the pool of ``config`` on ``provider`` at ``size`` and provision until that many are
    warm; returns how many were made now. Raises the first provisioning error (the instances
    made before it stay warm)."""
    ledger, pool = Ledger.default(), Pool.of(provider, config)
    pool_id = await anyio.to_thread.run_sync(_rows.set_size, ledger, pool, config, size)
    async with file_lock(lock_name(pool_id)):
        return await top_up(provider, _rows.value_free(config), pool, size, ledger)


async def top_up(
    provider: ComputeProvider, pooled: ComputeConfig, pool: Pool, size: int, ledger: Ledger
) -> int:
    """Provision what ``pool`` lacks of ``size`` (the caller holds its lock), a few at a time."""
    missing = size - await anyio.to_thread.run_sync(_rows.ready, ledger, pool, time.time(), 0.0)
    limiter = anyio.CapacityLimiter(WARM_FILL_CONCURRENCY)
    failures: list[Exception] = []

    async def one() -> None:
        async with limiter:
            try:
                await make_warm(provider, pooled, pool, ledger)
            except Exception as exc:  # the others go on; the first error is raised below
                failures.append(exc)

    async with anyio.create_task_group() as tasks:
        for _ in range(max(0, missing)):
            tasks.start_soon(one)
    if failures:
        raise failures[0]
    return max(0, missing)


async def make_warm(provider: ComputeProvider, pooled: ComputeConfig, pool: Pool, ledger: Ledger) -> None:
    """Provision one instance and offer it to every process of the home. No channel is opened
    to check it (that would spend the main channel the claimer adopts): provision succeeded."""
    info = await provider.provision(pooled)
    try:
        key = provider.handoff_key(info.instance_id)
        offered = await anyio.to_thread.run_sync(_rows.make_warm, ledger, info.instance_id, pool, key)
    except BaseException:
        with anyio.CancelScope(shield=True):
            await provider.shutdown(info.instance_id)
        raise
    if offered:  # else its row went (a stop or gc meanwhile): nothing to offer
        _activity.release(info.instance_id)  # the home's now, not this process's to reap


async def retire(provider: ComputeProvider, config: ComputeConfig) -> int:
    """End the shared pool of ``config`` on ``provider``: its size is forgotten (no refill makes
    more), a refill under way is waited for, and every instance still warm is shut down; returns
    how many. Claimed instances are their claimers'."""
    ledger, pool = Ledger.default(), Pool.of(provider, config)
    pool_id = await anyio.to_thread.run_sync(_rows.forget_pool, ledger, pool)
    async with contextlib.AsyncExitStack() as held:
        if pool_id is not None:  # a refill holds the lock while it works: let it finish
            await held.enter_async_context(file_lock(lock_name(pool_id)))
        taken = await anyio.to_thread.run_sync(_rows.take_all, ledger, pool, owner_tag())
    for instance_id in taken:
        await provider.shutdown(instance_id)
    return len(taken)


def start_refill(pool_id: int) -> None:
    """Top up pool ``pool_id`` in a detached child, unless a refill of it runs already (that
    one looks again once done). Returns at once: a daemon thread starts the child (a fork and
    exec: milliseconds the claimer's first command does not wait for) and then waits for it, so
    it leaves no zombie; at exit this process waits until the child is started."""
    started = threading.Event()
    threading.Thread(
        target=_refill_child, args=(pool_id, started), name="praisonai-warm-refill", daemon=True
    ).start()
    with _pending_lock:
        _pending[:] = [event for event in _pending if not event.is_set()]
        _pending.append(started)


_pending: list[threading.Event] = []
_pending_lock = threading.Lock()


@atexit.register
def _wait_started() -> None:
    """At exit: the refills this process asked for are started (not finished) before it ends."""
    with _pending_lock:
        pending = list(_pending)
    for started in pending:
        started.wait(REFILL_START_WAIT_S)


def _refill_child(pool_id: int, started: threading.Event) -> None:
    try:
        child = _spawn(pool_id)
    finally:
        started.set()
    if child is not None:
        child.wait()


def _spawn(pool_id: int) -> subprocess.Popen[bytes] | None:
    """The refill child, holding the pool's lock; ``None`` when a refill runs already."""
    fd = try_lock(lock_name(pool_id))
    if fd is None:
        return None
    package_root = str(Path(__file__).resolve().parents[3])  # the same code as this process runs
    path = os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH", "")) if p)
    try:
        with _log() as log_fd:
            child = subprocess.Popen(
                [sys.executable, "-m", "praisonai.compute.warm", str(pool_id), str(fd)],
                pass_fds=(fd,),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log_fd,  # why a refill failed, for `compute warm` users to read
                env={**os.environ, "PYTHONPATH": path},
                start_new_session=True,  # a Ctrl-C in the claimer's terminal does not cut a refill short
            )
    except OSError as exc:  # the claim stands; the next claim or `compute warm` fills the pool
        log.warning("could not start a refill of warm pool %d: %s", pool_id, exc)
        return None
    finally:
        os.close(fd)  # the child holds the lock now (flock belongs to the shared open file)
    return child


@contextlib.contextmanager
def _log() -> Iterator[int]:
    """``$PRAISONAI_HOME/warm-refill.log``, open for appending (started afresh when too big)."""
    logfile = praisonai_home() / "warm-refill.log"
    with contextlib.suppress(OSError):
        if logfile.stat().st_size > LOG_MAX_BYTES:
            logfile.unlink()
    fd = os.open(logfile, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        yield fd
    finally:
        os.close(fd)


async def refill(pool_id: int, fd: int | None) -> None:
    """The child's work: top up the pool while holding the lock ``fd``; once let go, look again
    and go on (taking the lock again) when claims emptied it meanwhile. It makes at most
    ``WARM_REFILL_ROUNDS`` times the pool's size, then ends whatever happens (the next claim
    starts another): a pool whose instances vanish as fast as they are made is not fed forever."""
    ledger, made, budget = Ledger.default(), 0, None
    while fd is not None and (budget is None or made < budget):
        try:
            found = await anyio.to_thread.run_sync(_rows.recorded, ledger, pool_id)
            if found is None:
                return
            budget = WARM_REFILL_ROUNDS * found.size
            provider = provider_for_record(found.pool.provider, found.spec)
            made += await top_up(provider, found.config, found.pool, found.size, ledger)
        finally:
            os.close(fd)
        if await anyio.to_thread.run_sync(_rows.ready, ledger, found.pool, time.time(), 0.0) >= found.size:
            return
        fd = try_lock(lock_name(pool_id))
