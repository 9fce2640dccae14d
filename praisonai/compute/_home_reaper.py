"""The home's reaper: a small detached process that stops the instances whose owner died and that
cannot stop themselves (local, SSH, Tenki), and pauses Modal instances that idleness pauses.

A docker instance stops itself (its watchdog, ``compute/watchdog.sh``; ``Capability.SELF_STOP``); a
local workspace or an SSH host has nothing inside that could. So provisioning one whose
``Lifetime`` ever stops it (``reaps``: :func:`watches`) makes sure that this process runs for its
home (``ensure_running``),
and any praisonai process of the home starts it again when it finds rows to watch and no reaper
(after a reboot, say). One per home, by a ``flock`` on ``$PRAISONAI_HOME/locks/home-reaper.lock``
(which holds its pid). Every ``POLL_S`` it reads the ledger and shuts down, with the provider
rebuilt from the row's spec, each watched instance whose creating process is gone (on this host)
and whose row's ``Lifetime`` says it expired (:func:`orphan_reason`): the rule ``gc`` applies,
applied without anyone running ``gc``; one that idleness pauses (``idle_action: pause``) is
paused instead (:func:`pause_reason`), and then only its ttl and its retain age remove it. A
paused docker instance is watched too (:data:`WATCHED_WHILE_PAUSED`): its watchdog is stopped or
frozen with it. While the owner lives, the owner's own in-process reaper decides for a running
instance; a paused one runs nothing of the owner's, so its ttl and retain age apply here whoever
holds it. The process exits when its home has nothing left to watch, or is gone.

Time is measured on this process's monotonic clock, so stepping the wall clock changes nothing:
a row's wall-clock stamps are read once, when the row is first seen (a stamp in the future counts
as now), and from then on every change of its ``last_active`` is activity at the moment it is seen.
Its log (reaps and failures) is ``$PRAISONAI_HOME/home-reaper.log``.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from praisonai._ledger import Ledger, LedgerEntry
from praisonai._lifetime import Lifetime
from praisonai._limits import LOG_MAX_BYTES, REAP_RETRY_AFTER_S, SHUTDOWN_TIMEOUT_S
from praisonai._types import Capability
from praisonai.compute import entry_points

if TYPE_CHECKING:
    from praisonai.compute.base import ComputeProvider

log = logging.getLogger("praisonai.home_reaper")

#: Builds the provider of a ledger row from its provider name and spec (the registry's).
Rebuild = Callable[[str, Mapping[str, Any]], "ComputeProvider"]

#: Providers whose instance stops itself (``Capability.SELF_STOP``) but cannot pause itself when
#: idle (the vendor's idle end would remove it, files and all: Modal): watched when idleness pauses it.
WATCHED_WHEN_PAUSING = frozenset({"modal"})
#: Providers whose instance stops itself by a watchdog inside it, which a pause stops or freezes
#: with it (docker): watched while paused, for its ttl and its retain age.
WATCHED_WHILE_PAUSED = frozenset({"docker"})
POLL_S = 1.0
#: A failed shutdown (``SHUTDOWN_TIMEOUT_S``) is tried again after REAP_RETRY_AFTER_S, doubling up to
#: RETRY_MAX_S (an SSH host that is down for good, or needs a password this process does not have).
RETRY_MAX_S = 3600.0
#: Consecutive unreadable polls (a corrupt or locked ledger) after which the process gives up.
MAX_FAILED_POLLS = 60
# The process rebuilds providers through the registry, which this module does not import (the
# registry leads back here through the providers' base).
_MAIN = (
    "import sys; from praisonai.compute._home_reaper import main; "
    "from praisonai.compute.registry import provider_for_record as rebuild; "
    "main(sys.argv[1], int(sys.argv[2]), rebuild)"
)

#: The wall clock; a seam for tests (the reaper itself reads it only when it first sees a row).
wall_clock: Callable[[], float] = time.time


# ---- starting it -------------------------------------------------------------------------------


def ensure_running(home: Path | None = None) -> bool:
    """Start the reaper of ``home`` (default: the current ``$PRAISONAI_HOME``) unless one runs;
    returns whether this call started one. Blocking (~3 ms when it starts one, µs otherwise).
    A failure is logged, not raised: the instance works without it, only unguarded."""
    from praisonai._home import praisonai_home

    home = (home or praisonai_home()).absolute()
    try:
        fd = _try_lock(home)
        if fd is None:
            return False
        try:
            _spawn(home, fd)  # the reaper inherits the lock: no second one can start in between
        finally:
            os.close(fd)
    except (OSError, subprocess.SubprocessError) as exc:
        log.warning("could not start the reaper process of %s: %s", home, exc)
        return False
    return True


def ensure_running_if_needed() -> None:
    """Start the current home's reaper when its ledger has instances to watch and none runs; for
    the first use of praisonai in a process (its in-process reaper calls this once, off the hot
    path). Never creates the home."""
    home = Path(os.environ.get("PRAISONAI_HOME") or Path.home() / ".praisonai").absolute()
    ledger = home / "ledger.sqlite3"
    if ledger.exists() and _watched(Ledger(ledger).entries()):
        ensure_running(home)


def _lock_path(home: Path) -> Path:
    return home / "locks" / "home-reaper.lock"


def _try_lock(home: Path) -> int | None:
    """An fd holding the home's reaper lock, or ``None`` when another process holds it."""
    path = _lock_path(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def _spawn(home: Path, lock: int) -> None:
    """Start the reaper detached, holding ``lock`` (an fd with the home's reaper lock): its own
    session, no terminal, reparented to init (the sh in between exits at once, so it never
    becomes this process's zombie)."""
    logfile = home / "home-reaper.log"
    with contextlib.suppress(OSError):
        if logfile.stat().st_size > LOG_MAX_BYTES:
            logfile.unlink()
    package_root = str(Path(__file__).resolve().parents[2])  # the same code as this process runs
    path = os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH", "")) if p)
    subprocess.run(
        [
            "/bin/sh",
            "-c",
            '"$@" </dev/null >/dev/null 2>>"$0" &',
            str(logfile),
            sys.executable,
            "-c",
            _MAIN,
            str(home),
            str(lock),
        ],
        env={**os.environ, "PRAISONAI_HOME": str(home), "PYTHONPATH": path},
        cwd="/",
        start_new_session=True,
        pass_fds=(lock,),
        check=True,
    )


# ---- the rule ----------------------------------------------------------------------------------


def _watched(entries: list[LedgerEntry]) -> list[LedgerEntry]:
    """The rows this process looks after: watched providers whose lifetime ever stops them (a
    paused one, only its ttl or retain age; a pause or a resume starts this process again,
    ``lifecycle.mark``)."""
    return [e for e in entries if _watches(e)]


def _watches(entry: LedgerEntry) -> bool:
    lifetime = entry.lifetime
    if entry.state != "paused":
        return watches(entry.provider, lifetime)
    if lifetime.ttl_s is None and lifetime.retain_s is None:  # kept until removed
        return False
    return entry.provider in WATCHED_WHILE_PAUSED or watches(entry.provider, lifetime)


def watches(provider: str, lifetime: Lifetime) -> bool:
    """Whether this process must look after an instance of ``provider`` living by ``lifetime``
    once its owner is gone: something ever stops it, and nothing inside it will (the provider
    lacks ``Capability.SELF_STOP``: local, ssh, Tenki), or idleness pauses it and the provider's
    own stop cannot pause (:data:`WATCHED_WHEN_PAUSING`)."""
    if not lifetime.reaps:
        return False
    return not _stops_itself(provider) or (lifetime.pauses and provider in WATCHED_WHEN_PAUSING)


@functools.cache
def _stops_itself(provider: str) -> bool:
    """Whether ``provider``'s instances have a dead-man's switch of their own (its class, found by
    name as the registry finds it); True for one this process cannot load (unknown, or its
    package missing): it could not stop that instance anyway."""
    entry = entry_points.entry_point(provider)
    try:
        found = entry.load() if entry is not None else None
    except (ImportError, AttributeError):
        found = None
    return found is None or Capability.SELF_STOP in found.capabilities


@dataclass(slots=True)
class Seen:
    """One row as this process has watched it, in its monotonic time."""

    stamp: float  # the row's last_active when it last changed
    active_at: float  # when that activity happened
    born_at: float  # when the instance was created
    retry_at: float = 0.0  # after a failed shutdown, when to try again
    retry_after: float = REAP_RETRY_AFTER_S

    @classmethod
    def first(cls, entry: LedgerEntry, now: float) -> Seen:
        """Trust the wall clock once; a stamp in the future (the clock stepped back) is now."""
        wall = wall_clock()
        idle, age = max(0.0, wall - entry.last_active), max(0.0, wall - entry.created_at)
        return cls(entry.last_active, now - idle, now - age)

    def update(self, entry: LedgerEntry, now: float) -> None:
        if entry.last_active != self.stamp:  # another process stamped activity since we looked
            self.stamp, self.active_at = entry.last_active, now


def orphan_reason(entry: LedgerEntry, *, idle_s: float, age_s: float) -> str | None:
    """Why the instance of ``entry`` must go now that it has been idle ``idle_s`` seconds and
    lived ``age_s`` (its lifetime expired), or ``None``: only when its creating process (on this
    host) is gone. ``gc`` applies the same rule. A paused instance is idle by definition: only
    its ttl and its retain age remove it (``Lifetime.paused_expired``), whether its creator lives
    or not: it runs nothing of theirs, and the ledger's stamps say whether anyone used it."""
    if entry.state == "paused":
        why = entry.lifetime.paused_expired(idle_s=idle_s, age_s=age_s)
        return None if why is None else f"it was paused and {why}"
    if entry.owner_alive() is not False:  # alive (it reaps for itself), or on another host
        return None
    why = entry.lifetime.expired(idle_s=idle_s, age_s=age_s)
    return None if why is None else f"its creator {entry.owner} is gone and it was {why}"


def pause_reason(entry: LedgerEntry, *, idle_s: float, age_s: float) -> str | None:
    """Why the running instance of ``entry``, which idleness pauses, must be paused now, or
    ``None``: as :func:`orphan_reason`, only once its creating process is gone."""
    if entry.state == "paused" or entry.owner_alive() is not False:
        return None
    why = entry.lifetime.idle_pause(idle_s=idle_s, age_s=age_s)
    return None if why is None else f"its creator {entry.owner} is gone and it was {why}"


# ---- the process -------------------------------------------------------------------------------


def main(home: str, lock: int, rebuild: Rebuild) -> None:
    """The reaper process: watch ``home`` while holding its reaper lock (the fd ``lock``, taken by
    the process that started this one) until nothing is left to watch, shutting instances down
    through the provider ``rebuild`` makes of their row."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s home reaper %(process)d: %(message)s")
    os.environ["PRAISONAI_HOME"] = home  # providers' shutdown forgets rows in this home
    try:
        os.ftruncate(lock, 0)
        os.write(lock, f"{os.getpid()}\n".encode())
        _watch(Path(home), lock, rebuild)
    finally:
        os.close(lock)


def _watch(home: Path, fd: int, rebuild: Rebuild) -> None:
    path = home / "ledger.sqlite3"
    seen: dict[str, Seen] = {}
    failures = 0
    while path.exists():  # a removed home: nothing to do
        try:
            rows = _watched(Ledger(path).entries())
            failures = 0
        except Exception as exc:  # a corrupt or locked ledger: try again, not forever
            failures += 1
            log.warning("cannot read the ledger %s: %s", path, exc)
            if failures >= MAX_FAILED_POLLS:
                return
            time.sleep(POLL_S)
            continue
        if not rows and not _keep_watching(home, fd, path):
            return
        _reap_due(rows, seen, rebuild)
        time.sleep(POLL_S)


def _keep_watching(home: Path, fd: int, path: Path) -> bool:
    """Nothing to watch: give the lock up, then look once more, so that a row recorded meanwhile
    (whose provisioner saw the lock held and started no reaper) is not left alone."""
    fcntl.flock(fd, fcntl.LOCK_UN)
    try:
        if not _watched(Ledger(path).entries()):
            return False
    except Exception:  # unreadable now: the next process to use the home starts a reaper again
        return False
    with contextlib.suppress(BlockingIOError):
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    return False  # another reaper took over


def _reap_due(rows: list[LedgerEntry], seen: dict[str, Seen], rebuild: Rebuild) -> None:
    now = time.monotonic()
    for gone in seen.keys() - {e.instance_id for e in rows}:
        del seen[gone]
    for entry in rows:
        watch = seen.get(entry.instance_id)
        if watch is None:
            watch = seen[entry.instance_id] = Seen.first(entry, now)
        else:
            watch.update(entry, now)
        idle_s, age_s = now - watch.active_at, now - watch.born_at
        pause = pause_reason(entry, idle_s=idle_s, age_s=age_s)
        why = pause or orphan_reason(entry, idle_s=idle_s, age_s=age_s)
        if why and now >= watch.retry_at and not _act(entry, why, bool(pause), watch.retry_after, rebuild):
            watch.retry_at = now + watch.retry_after
            watch.retry_after = min(2 * watch.retry_after, RETRY_MAX_S)


def _act(entry: LedgerEntry, why: str, pause: bool, retry_after: float, rebuild: Rebuild) -> bool:
    """Pause the instance (its row then says ``paused``) or shut it down (its row goes with it)."""
    verb, done = ("pause", "paused") if pause else ("shut down", "shut down")

    async def act() -> None:
        provider = rebuild(entry.provider, entry.spec)
        with anyio.fail_after(SHUTDOWN_TIMEOUT_S):
            await (provider.pause if pause else provider.shutdown)(entry.instance_id)

    try:
        anyio.run(act)
    except Exception as exc:
        log.warning(
            "could not %s %s (%s): %s; retrying in %gs", verb, entry.instance_id, why, exc, retry_after
        )
        return False
    log.info("%s %s: %s", done, entry.instance_id, why)
    return True
