"""Activity per instance, stamped in memory on every call and written to the ledger off the hot path.

Activity is what keeps an instance from being idle: a command running or started, a file
operation, a background-process request, and session traffic (a command sent, input typed,
output read, or a session command still running). No I/O on the hot path: :func:`touch` is a dict
lookup and a clock read, :class:`in_use` adds an uncontended lock for its counter (~1.5 µs in
all, against a ~2 ms exec).
The lifecycle thread (``praisonai.compute._reaper``) reads this state: it writes stamps to the
ledger at most every ``FLUSH_EVERY_S`` per instance, and shuts down the instances this process
provisioned (:func:`adopt`) once they are idle or past their lifetime.

All state is per process: a forked child starts with none (it owns nothing of its parent's).
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING

from praisonai._errors import InstanceNotFoundError
from praisonai._lifetime import Lifetime
from praisonai.runtime.transport import Receiver, Transport

if TYPE_CHECKING:
    from praisonai._ledger import Ledger
    from praisonai.compute.base import ComputeProvider
    from praisonai.runtime.session import ShellSession


@dataclass(slots=True)
class Owned:
    """What this process needs to shut down an instance it provisioned."""

    provider: ComputeProvider
    lifetime: Lifetime
    ledger: Ledger
    created: float  # monotonic
    ready: bool = False  # provisioned: until then the provision itself decides its fate
    paused: bool = False  # paused (``pause``): idleness has nothing more to do; its ttl still counts
    retry_at: float = 0.0  # monotonic: after a failed shutdown, when to try again


class Tracked:
    """One instance's activity. Written by event-loop and reader threads, read by the lifecycle
    thread; plain attribute stores are atomic under the GIL, counters change under ``_lock``."""

    __slots__ = (
        "flushed_at",
        "flushed_last",
        "in_flight",
        "last",
        "ledger_seen_at",
        "ledger_stamp",
        "owned",
        "sessions",
    )

    def __init__(self, now: float) -> None:
        self.last = now  # monotonic time of the last activity
        self.in_flight = 0  # calls running now
        self.flushed_at = 0.0  # monotonic: when the ledger last got a stamp of this instance
        self.flushed_last = now  # the activity time that stamp carried
        self.ledger_stamp: float | None = None  # the ledger's wall-clock stamp as last written or read here
        self.ledger_seen_at = now  # monotonic: when that was
        self.owned: Owned | None = None
        self.sessions: weakref.WeakSet[ShellSession] = weakref.WeakSet()

    def busy(self) -> bool:
        """A call is in flight, or a session's command is still running (it counts until it ends)."""
        if self.in_flight:
            return True
        with _lock:  # the set may grow on another thread while we look
            sessions = list(self.sessions)
        return any(s.running for s in sessions)


_lock = threading.Lock()
_tracked: dict[str, Tracked] = {}
#: Why this process shut instances down by itself (the latest few), for the error a late call gets.
_reaped: dict[str, str] = {}
_REAPED_KEPT = 256
#: Starts the lifecycle thread; set by ``_reaper`` on import (this module must not import it).
on_first_use: Callable[[], None] = lambda: None  # noqa: E731


def touch(instance_id: str) -> None:
    """Note activity on the instance now. The hot path: no I/O, no lock for a known instance."""
    tracked = _tracked.get(instance_id) or _track(instance_id)
    tracked.last = time.monotonic()


class in_use:  # lower case: read like a function, ``with in_use(instance_id):``
    """Marks the instance busy for the duration of a call, and active at its start and end."""

    __slots__ = ("_instance_id", "_tracked")

    def __init__(self, instance_id: str) -> None:
        self._instance_id = instance_id
        self._tracked = _tracked.get(instance_id) or _track(instance_id)

    def __enter__(self) -> None:
        tracked = self._tracked
        with _lock:
            tracked.in_flight += 1
        tracked.last = time.monotonic()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        tracked = self._tracked
        tracked.last = time.monotonic()
        with _lock:
            tracked.in_flight -= 1
        if isinstance(exc, InstanceNotFoundError) and self._instance_id in _reaped:
            why = _reaped[self._instance_id]  # a late call gets the reason, not only "not found"
            raise InstanceNotFoundError(f"{exc} (this process shut it down: {why})", op=exc.op) from exc


def reaped(instance_id: str, why: str) -> None:
    """Remember that this process shut the instance down by itself, and why."""
    with _lock:
        _reaped[instance_id] = why
        while len(_reaped) > _REAPED_KEPT:
            del _reaped[next(iter(_reaped))]


def adopt(instance_id: str, provider: ComputeProvider, lifetime: Lifetime, ledger: Ledger) -> None:
    """This process is provisioning the instance: once :func:`ready`, shut it down when
    ``lifetime`` says so, with ``provider``, and stamp its activity into ``ledger``."""
    tracked = _tracked.get(instance_id) or _track(instance_id)
    tracked.owned = Owned(provider, lifetime, ledger, time.monotonic())


def ready(instance_id: str) -> None:
    """The instance is provisioned: the idle clock starts now."""
    tracked = _tracked.get(instance_id)
    if tracked is not None and tracked.owned is not None:
        tracked.owned.ready = True
        tracked.last = time.monotonic()


def paused(instance_id: str, is_paused: bool) -> None:
    """The instance this process owns was paused or resumed; either is activity."""
    tracked = _tracked.get(instance_id)
    if tracked is not None and tracked.owned is not None:
        tracked.owned.paused = is_paused
        tracked.last = time.monotonic()


def release(instance_id: str) -> None:
    """Forget the instance (it was shut down, or its provision failed); idempotent."""
    with _lock:
        _tracked.pop(instance_id, None)


def watch_session(instance_id: str, session: ShellSession) -> None:
    """Count the session's running command as activity while the session object lives."""
    tracked = _tracked.get(instance_id) or _track(instance_id)
    with _lock:
        tracked.sessions.add(session)


def tracked() -> list[tuple[str, Tracked]]:
    """Every tracked instance (a copy: the lifecycle thread iterates it while calls go on)."""
    with _lock:
        return list(_tracked.items())


def drop_if(instance_id: str, entry: Tracked) -> None:
    """Forget ``entry`` unless it was replaced meanwhile (a pruned instance is tracked again on use)."""
    with _lock:
        if _tracked.get(instance_id) is entry:
            del _tracked[instance_id]


def _track(instance_id: str) -> Tracked:
    with _lock:
        entry = _tracked.get(instance_id)
        if entry is None:
            entry = _tracked[instance_id] = Tracked(time.monotonic())
    on_first_use()
    return entry


def _forget_all() -> None:
    """In a forked child: the parent's instances are not the child's to stamp or reap."""
    global _lock
    _lock = threading.Lock()  # it may have been held by another thread of the parent at fork
    _tracked.clear()


os.register_at_fork(after_in_child=_forget_all)


class StampedTransport(Transport):
    """A session's transport that notes activity on every input sent and output received."""

    def __init__(self, inner: Transport, instance_id: str) -> None:
        self.inner = inner
        self.instance_id = instance_id

    def start(self, on_stdout: Receiver, on_stderr: Receiver, on_closed: Callable[[], None]) -> None:
        self.inner.start(self._stamped(on_stdout), self._stamped(on_stderr), on_closed)

    def _stamped(self, receive: Receiver) -> Receiver:
        def received(data: bytes) -> None:
            touch(self.instance_id)
            receive(data)

        return received

    def _pump(self, on_stdout: Receiver, on_stderr: Receiver) -> None:
        raise NotImplementedError("the inner transport pumps")  # start() delegates, never calls this

    def send(self, data: bytes) -> None:
        touch(self.instance_id)
        self.inner.send(data)

    def send_nowait(self, data: bytes) -> int:
        touch(self.instance_id)
        return self.inner.send_nowait(data)

    def signal_group(self, signum: int) -> bool:
        touch(self.instance_id)
        return self.inner.signal_group(signum)

    def kill_all(self) -> bool:
        return self.inner.kill_all()

    def alive(self) -> bool:
        return self.inner.alive()

    def exit_code(self) -> int | None:
        return self.inner.exit_code()

    def close(self) -> None:
        self.inner.close()
