"""The in-process reaper: one daemon thread that flushes activity stamps and stops idle instances.

Every ``TICK_S`` it (1) writes changed activity stamps (``_activity``) to the ledger, each
instance at most every ``FLUSH_EVERY_S``, so ``gc`` in another process sees how long an instance
has really been idle; and (2) shuts down each instance this process provisioned that its
``Lifetime`` (``praisonai._lifetime``) says must stop: past its ttl, or past its idle limit with no
activity here or in the ledger and nothing in flight. Shutdowns run through the portal, with the provider's
own idempotent ``shutdown``, so a user's shutdown at the same moment is harmless.

The thread starts on first use (a provision or a first call on any instance), is a daemon (it
never keeps the interpreter alive) and survives every error of a tick (it logs them). On start it
also makes sure the home's reaper process (``_home_reaper``) runs if the ledger has local or SSH
instances for it to watch: those outlive a process that dies without shutting them down.

Idle time is measured on the monotonic clock. The ledger's stamps are wall-clock times (they cross
processes), so only a *change* of an instance's stamp counts as activity elsewhere, at the time it
carries if that lies between this process's previous look and now; otherwise the wall clock was
stepped (back: a stamp from the "future"; forward: one from before the previous look) and the
activity counts as now. So a clock step neither suspends reaping nor hastens it.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import anyio

from praisonai import _portal
from praisonai._home import home_path
from praisonai._ledger import Ledger
from praisonai._limits import REAP_RETRY_AFTER_S, SHUTDOWN_TIMEOUT_S
from praisonai.compute import _activity, _home_reaper
from praisonai.compute._activity import Tracked

log = logging.getLogger("praisonai.reaper")

TICK_S = 1.0
#: A stamp reaches the ledger at most this often per instance (activity stamps cost no sqlite write).
FLUSH_EVERY_S = 2.0
#: An instance without an owner here (connected to, not provisioned) is forgotten after this long idle.
FORGET_UNOWNED_AFTER_S = 600.0
#: How much older than this process's previous look a fresh ledger stamp may be (another process
#: flushes up to ``FLUSH_EVERY_S`` after the activity, on its own tick).
_STAMP_LAG_S = FLUSH_EVERY_S + 2 * TICK_S
#: When a failed reaping shutdown is tried again.

#: The wall clock, read to convert to and from the ledger's stamps; a seam for tests.
wall_clock: Callable[[], float] = time.time

_start_lock = threading.Lock()
_thread: threading.Thread | None = None


def ensure_running() -> None:
    """Start the thread unless it runs (cheap when it does: one attribute read)."""
    global _thread
    if _thread is not None:
        return
    with _start_lock:
        if _thread is None:
            _thread = threading.Thread(target=_run, name="praisonai-reaper", daemon=True)
            _thread.start()


def _run() -> None:
    try:
        _home_reaper.ensure_running_if_needed()
    except Exception as exc:  # an unusable home or ledger: this process's own reaping goes on
        log.warning("could not check for the home's reaper process: %s", exc)
    while True:
        time.sleep(TICK_S)
        try:
            tick(time.monotonic())
        except Exception:  # the thread must outlive any one failure; the next tick retries
            if sys.is_finalizing():  # the portal stopped under us at exit: nothing to report
                return
            log.exception("the instance reaper's tick failed")


def tick(now: float) -> None:
    """One round: flush stamps, then shut down what is due. Public for tests."""
    entries = _activity.tracked()
    flush(entries, now)
    due = [(iid, why) for iid, entry in entries if (why := reason_to_stop(iid, entry, now))]
    if due:
        _portal.call(_stop_all, due)
    _prune(entries, now)


# ---- flushing ------------------------------------------------------------------------------


def flush(entries: Sequence[tuple[str, Tracked]], now: float, *, force: bool = False) -> None:
    """Write to the ledger each instance's activity that changed since its last stamp — or, while
    it is busy, "now" — at most every ``FLUSH_EVERY_S`` per instance (``force``: regardless)."""
    wall_minus_mono = wall_clock() - now
    batches: dict[Path, dict[str, float]] = {}
    for instance_id, entry in entries:
        busy = entry.busy()
        if not busy and entry.last <= entry.flushed_last:
            continue
        if not force and now - entry.flushed_at < FLUSH_EVERY_S:
            continue
        stamp = now if busy else entry.last
        path = entry.owned.ledger.path if entry.owned else _default_ledger_path()
        batches.setdefault(path, {})[instance_id] = entry.ledger_stamp = stamp + wall_minus_mono
        entry.flushed_at, entry.flushed_last, entry.ledger_seen_at = now, stamp, now
    for path, stamps in batches.items():
        if not path.exists():  # its home is gone (a removed temporary home): nothing to stamp
            continue
        try:
            Ledger(path).touch_many(stamps)
        except Exception as exc:  # a locked or broken ledger loses a stamp, never the thread
            log.warning("could not stamp activity into %s: %s", path, exc)


def _default_ledger_path() -> Path:
    """The current home's ledger, without creating the home (``praisonai_home`` would)."""
    return home_path() / "ledger.sqlite3"


# ---- reaping -------------------------------------------------------------------------------


def reason_to_stop(instance_id: str, entry: Tracked, now: float, *, ledger: bool = True) -> str | None:
    """Why this process should shut the instance down now, or ``None`` to leave it. With
    ``ledger``, idleness is also checked against the stamps other processes left there."""
    owned = entry.owned
    if owned is None or not owned.ready or now < owned.retry_at:
        return None
    lifetime = owned.lifetime
    past_ttl = lifetime.past_ttl(now - owned.created)
    if past_ttl is not None:  # however busy, or paused
        return past_ttl
    if owned.paused:  # until a call resumes it
        return None
    why = lifetime.idle_too_long(now - entry.last)
    if why is None or entry.busy():
        return None
    # Idle here; another process of this home may have used it meanwhile (its stamps are in the ledger).
    row = owned.ledger.get(instance_id) if ledger else None
    if row is not None:
        elsewhere = _activity_elsewhere(entry, row.last_active, now)
        if elsewhere is not None and lifetime.idle_too_long(now - elsewhere) is None:
            entry.last = max(entry.last, elsewhere)
            entry.flushed_last = max(entry.flushed_last, entry.last)  # it is the ledger's already
            return None
    return why


def _activity_elsewhere(entry: Tracked, stamp: float, now: float) -> float | None:
    """When the activity behind the ledger's ``stamp`` happened, as a monotonic time, or ``None``
    when the stamp did not change since this process last wrote or read it (see the module
    docstring for why a stamp outside the window since that look counts as now)."""
    if stamp == entry.ledger_stamp:
        return None
    since = entry.ledger_seen_at - _STAMP_LAG_S
    entry.ledger_stamp, entry.ledger_seen_at = stamp, now
    at = stamp - (wall_clock() - now)
    return at if since <= at <= now else now


async def _stop_all(due: Sequence[tuple[str, str]]) -> None:
    async with anyio.create_task_group() as tg:
        for instance_id, why in due:
            tg.start_soon(_stop, instance_id, why)


async def _stop(instance_id: str, why: str) -> None:
    """Shut the instance down, unless it became active since the decision (checked once more,
    in memory only: this runs on the event loop, which must not wait on sqlite)."""
    entry = dict(_activity.tracked()).get(instance_id)
    if entry is None or entry.owned is None:  # shut down by its user meanwhile
        return
    owned = entry.owned
    if reason_to_stop(instance_id, entry, time.monotonic(), ledger=False) is None:
        return
    # Idleness pauses where the instance says so; its ttl still removes it, paused or not.
    pause = owned.lifetime.pauses and owned.lifetime.past_ttl(time.monotonic() - owned.created) is None
    try:
        with anyio.fail_after(SHUTDOWN_TIMEOUT_S):
            await (owned.provider.pause if pause else owned.provider.shutdown)(instance_id)
    except Exception as exc:
        owned.retry_at = time.monotonic() + REAP_RETRY_AFTER_S
        log.warning(
            "could not %s %s (%s): %s; retrying in %gs",
            "pause" if pause else "shut down",
            instance_id,
            why,
            exc,
            REAP_RETRY_AFTER_S,
        )
        return
    if not pause:  # a late call to a paused instance resumes it: nothing to explain
        _activity.release(instance_id)
        _activity.reaped(instance_id, why)
    log.info("%s %s: %s", "paused" if pause else "shut down", instance_id, why)


def _prune(entries: Sequence[tuple[str, Tracked]], now: float) -> None:
    """Forget instances this process only used (not provisioned), long idle and fully stamped."""
    for instance_id, entry in entries:
        quiet = entry.owned is None and not entry.busy() and entry.last <= entry.flushed_last
        if quiet and now - entry.last > FORGET_UNOWNED_AFTER_S:
            _activity.drop_if(instance_id, entry)


def _forget_thread() -> None:
    """In a forked child the thread does not exist; the next use starts one."""
    global _thread, _start_lock
    _thread = None
    _start_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_thread)
_activity.on_first_use = ensure_running
