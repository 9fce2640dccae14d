"""The instance ledger: every instance this machine creates, recorded *before* it is created.

One sqlite file, ``$PRAISONAI_HOME/ledger.sqlite3``, shared by every process of this home. It is
safe under concurrent processes and threads: WAL journal, a busy timeout, one connection per thread
(never shared across threads) and one statement per transaction (``transaction``: a few, under the
write lock). A row holds only what rebuilds the provider in another process, in its ``spec``
column: the provider's options as data (``ComputeProvider.options.to_record()``, with a ``type``;
rows of older versions lack it), never secrets. ``ps``, ``stop`` and ``gc`` read it and reconcile
it with each provider's own list.

A row also holds the instance's :class:`~praisonai._lifetime.Lifetime` (columns ``auto_shutdown``,
``idle_timeout_s``, ``ttl_s``, ``idle_action``, ``retain_s``: the same names) and its last activity, which
``praisonai.compute._activity`` stamps at most every couple of seconds per instance, so that ``gc``
can tell an abandoned idle instance from a busy one. Files written by older versions gain those
columns on first open (:mod:`praisonai._sqlite` opens and migrates the file, as it does the
sessions store's).

A ledger that cannot be used raises ``HomeUnusableError`` naming the file and what to do. A file
that is not a database (or is damaged) is never overwritten nor moved: like a database server,
praisonai refuses it and leaves the decision to its owner. A row that cannot be read is skipped
and reported (``scan``), never fatal to the others.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import socket
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from praisonai import _sqlite
from praisonai._errors import HomeUnusableError
from praisonai._home import disk_full, full_home, praisonai_home, unusable_home
from praisonai._home import home_tag as home_tag  # where its callers have always found it
from praisonai._lifetime import DEFAULT_LIFETIME, Lifetime

#: How long a call waits for another process's write lock before sqlite raises "database is locked".
BUSY_TIMEOUT_S = _sqlite.BUSY_TIMEOUT_S

# The first version's table; version 2 adds the later columns.
_FIRST = """CREATE TABLE instances (
    instance_id TEXT PRIMARY KEY, provider TEXT NOT NULL, spec TEXT NOT NULL, owner TEXT NOT NULL,
    created_at REAL NOT NULL, state TEXT NOT NULL, last_active REAL NOT NULL)"""
#: Columns added after the first version, with the value rows of older versions get: their
#: instances were made under ComputeConfig's defaults (a ttl_s of NULL: none).
_ADDED = (
    ("idle_timeout_s", f"REAL NOT NULL DEFAULT {DEFAULT_LIFETIME.idle_timeout_s}"),
    ("ttl_s", "REAL"),
    ("auto_shutdown", f"INTEGER NOT NULL DEFAULT {int(DEFAULT_LIFETIME.auto_shutdown)}"),
)
_COLUMNS = (
    "instance_id, provider, spec, owner, created_at, state, last_active, "
    "idle_timeout_s, ttl_s, auto_shutdown, idle_action, retain_s"
)


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """One recorded instance; ``registry.provider_for_record(provider, spec)`` rebuilds its provider.

    ``state`` is ``"provisioning"`` from the moment before creation until setup succeeded, then
    ``"running"``; ``"failed"`` when the provision failed and what it made could not be removed
    (its engine stopped answering): ``stop`` and ``gc`` clear such a row. ``owner`` is
    ``user@host:pid`` of the creating process. ``last_active`` is the wall-clock time of the last
    activity any process of this home stamped (at most a few seconds stale). ``lifetime`` is
    the instance's idle/ttl policy, as its config gave it.
    """

    instance_id: str
    provider: str
    spec: Mapping[str, Any]
    owner: str
    created_at: float
    state: str
    last_active: float
    lifetime: Lifetime = DEFAULT_LIFETIME

    def abandoned(self) -> bool:
        """Whether its provision ended without handing the instance out: it failed (and the
        instance could not be removed then), or its creator died before setup finished."""
        return self.state == "failed" or (self.state == "provisioning" and self.owner_alive() is False)

    def owner_alive(self) -> bool | None:
        """Whether the creating process still runs: ``None`` when it ran on another host."""
        return owner_alive(self.owner)


def owner_alive(owner: str) -> bool | None:
    """Whether the process an owner tag ``user@host:pid`` names still runs: ``None`` when it
    runs on another host (or the tag is not of that form), which this host cannot tell."""
    host, _, pid = owner.rpartition("@")[2].rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return None
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, someone else's
        return True
    return True


class Ledger:
    """The ledger file at ``path``. Every method is one short autocommit statement, but
    ``transaction``, a few statements under the write lock."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    @classmethod
    def default(cls) -> Ledger:
        """The ledger of the current ``$PRAISONAI_HOME`` (read at each call, not cached)."""
        return cls(praisonai_home() / "ledger.sqlite3")

    def record(
        self,
        instance_id: str,
        provider: str,
        spec: Mapping[str, Any],
        owner: str,
        created_at: float,
        *,
        lifetime: Lifetime = DEFAULT_LIFETIME,
    ) -> None:
        """Record an instance about to be created, in state ``"provisioning"``, last active at
        ``created_at`` (replaces a row with the same id). ``spec`` must be JSON-able;
        ``TypeError`` otherwise."""
        spec_json = json.dumps(dict(spec), sort_keys=True)
        self._run(
            f"INSERT OR REPLACE INTO instances ({_COLUMNS}) "
            "VALUES (?, ?, ?, ?, ?, 'provisioning', ?, ?, ?, ?, ?, ?)",
            instance_id,
            provider,
            spec_json,
            owner,
            created_at,
            created_at,
            lifetime.idle_timeout_s,
            lifetime.ttl_s,
            int(lifetime.auto_shutdown),
            lifetime.idle_action,
            lifetime.retain_s,
        )

    def mark(self, instance_id: str, state: str) -> None:
        """Set the instance's state; an unknown id stays unknown (a forgotten row is never revived)."""
        self._run("UPDATE instances SET state = ? WHERE instance_id = ?", state, instance_id)

    def touch(self, instance_id: str, at: float | None = None) -> None:
        """Stamp activity at ``at`` (default now) for idle detection; an unknown id is ignored."""
        self.touch_many({instance_id: time.time() if at is None else at})

    def touch_many(self, stamps: Mapping[str, float]) -> None:
        """Stamp several instances in one transaction. A stamp never moves ``last_active``
        back (flushes from several processes may arrive out of order), except from the future:
        a stored stamp later than now (the wall clock stepped back since) counts as now."""
        now = time.time()
        rows = [(now, at, instance_id) for instance_id, at in stamps.items()]
        if rows:
            with _translated(self.path):
                _connection(self.path).executemany(
                    "UPDATE instances SET last_active = max(min(last_active, ?), ?) WHERE instance_id = ?",
                    rows,
                )

    def forget(self, instance_id: str) -> None:
        """Remove the instance's row; idempotent."""
        self._run("DELETE FROM instances WHERE instance_id = ?", instance_id)

    def get(self, instance_id: str) -> LedgerEntry | None:
        """The instance's row, or ``None`` (also when the row cannot be read: ``scan`` says why)."""
        rows = self._run(f"SELECT rowid, {_COLUMNS} FROM instances WHERE instance_id = ?", instance_id)
        try:
            return _entry(rows[0][1:]) if rows else None
        except ValueError:
            return None

    def entries(self) -> list[LedgerEntry]:
        """Every readable row, oldest first (rows that cannot be read are skipped: see ``scan``)."""
        return self.scan()[0]

    def scan(
        self, flaw: Callable[[LedgerEntry], str | None] = lambda entry: None
    ) -> tuple[list[LedgerEntry], list[str]]:
        """Every readable row, oldest first, and one sentence per row skipped: which row, why,
        and how to remove it. A row is skipped when its JSON or a field is damaged, or when
        ``flaw`` says what is wrong with it."""
        entries: list[LedgerEntry] = []
        problems: list[str] = []
        for rowid, *row in self._run(f"SELECT rowid, {_COLUMNS} FROM instances ORDER BY rowid"):
            try:
                entry = _entry(tuple(row))
                why = flaw(entry)
            except ValueError as exc:
                why = str(exc)
            if why is None:
                entries.append(entry)
                continue
            remove = shlex.join(["sqlite3", str(self.path), f"DELETE FROM instances WHERE rowid = {rowid}"])
            problems.append(
                f"skipped row {rowid} ({row[0]!r}) of the ledger {self.path}: {why}; remove it: {remove}"
            )
        entries.sort(key=lambda e: e.created_at)
        return entries, problems

    def execute(
        self, sql: str, params: Sequence[object] | Mapping[str, object] = ()
    ) -> list[tuple[Any, ...]]:
        """One statement, its own transaction (autocommit), on this thread's connection; its rows.
        For the modules that keep rows of their own here (``praisonai.compute.warm``): one
        statement is one atomic step against every other process of this home."""
        with _translated(self.path):
            return _connection(self.path).execute(sql, params).fetchall()

    @contextlib.contextmanager
    def transaction(
        self,
    ) -> Iterator[Callable[[str, Sequence[object] | Mapping[str, object]], list[tuple[Any, ...]]]]:
        """Several statements as one transaction, for a step one statement cannot say (sqlite's
        ``RETURNING`` gives the values *after* an update): ``with ledger.transaction() as run:
        rows = run(sql, params)``. It takes the write lock first (``BEGIN IMMEDIATE``), so no other
        process's write falls between its statements; it commits when the block ends, and rolls
        back when the block raises."""
        with _translated(self.path):
            db = _connection(self.path)
            db.execute("BEGIN IMMEDIATE")
            try:
                yield lambda sql, params: db.execute(sql, params).fetchall()
                db.execute("COMMIT")
            finally:
                if db.in_transaction:  # the block raised, or the commit failed: nothing of it stays
                    db.execute("ROLLBACK")

    def _run(self, sql: str, *params: object) -> list[tuple[Any, ...]]:
        """One statement, its own transaction (autocommit), on this thread's connection."""
        with _translated(self.path):
            return _connection(self.path).execute(sql, params).fetchall()


_threads = threading.local()


def _connection(path: Path) -> sqlite3.Connection:
    """This thread's connection to ``path``, opened on first use. Kept open because closing the
    last connection checkpoints the WAL (~2 ms of fsync per call); keyed by pid so that a forked
    child never uses its parent's connection."""
    cache: dict[tuple[int, Path], sqlite3.Connection] = _threads.__dict__.setdefault("dbs", {})
    key = (os.getpid(), path)
    if key not in cache:
        cache[key] = _open(path)
    return cache[key]


@contextlib.contextmanager
def _translated(path: Path) -> Iterator[None]:
    """sqlite's and the file system's errors as one ``HomeUnusableError`` naming the file.

    A file that is not a database, or a damaged one, is refused and left exactly as it is (no
    data loss); its owner decides whether to move it aside."""
    try:
        yield
    except (OSError, sqlite3.Error) as exc:
        if disk_full(exc, path.parent):
            raise HomeUnusableError(full_home(path.parent, f"its ledger {path.name}"), op="ledger") from exc
        why = (exc.strerror if isinstance(exc, OSError) else None) or str(exc)
        why = why[:1].lower() + why[1:]
        refused = ("not a database", "malformed", "not a praisonai")
        if isinstance(exc, sqlite3.DatabaseError) and any(reason in why for reason in refused):
            raise HomeUnusableError(
                f"the ledger {path} is damaged ({why}); praisonai leaves it untouched: move it aside "
                f"(mv {path} {path}.damaged) to start a new one, and `praisonai compute ps` still finds "
                "the instances it recorded through the providers' own lists",
                op="ledger",
            ) from exc
        if "locked" in why:  # another process held its write lock past BUSY_TIMEOUT_S
            raise HomeUnusableError(
                f"the ledger {path} stayed locked by another process for {BUSY_TIMEOUT_S:g}s; try again",
                op="ledger",
            ) from exc
        raise HomeUnusableError(
            unusable_home(path.parent, f"its ledger {path.name}: {why}"), op="ledger"
        ) from exc


def _open(path: Path) -> sqlite3.Connection:
    """Autocommit mode: each statement is its own short transaction. ``synchronous=NORMAL`` in WAL
    mode is crash-safe for the app (a power cut may lose the last rows, which reconciliation with
    the providers' own lists recovers) and skips an fsync per write."""
    return _sqlite.connect(path, _LAYOUT)


def _add_lifetime_columns(db: sqlite3.Connection) -> None:
    """Version 2: the lifetime's columns. A file of the versions before schema versions were
    recorded may have some of them already (they were added one at a time)."""
    have = {row[1] for row in db.execute("PRAGMA table_info(instances)")}
    for name, declaration in _ADDED:
        if name not in have:
            db.execute(f"ALTER TABLE instances ADD COLUMN {name} {declaration}")


def _unversioned(tables: set[str]) -> int | None:
    """A ledger written before versions were recorded has its ``instances`` table: version 1."""
    return 1 if "instances" in tables else None


#: Version 3: warm pools (``praisonai.compute.warm``). A warm instance is a row in state ``warm``
#: with its value-free definition key and, where the provider has one, the key another process
#: needs to adopt its main channel (``handoff``: never shown); ``warm_pools`` holds each pool's
#: size and value-free definition, so any process can refill it.
_WARM = (
    "ALTER TABLE instances ADD COLUMN definition TEXT",
    "ALTER TABLE instances ADD COLUMN handoff TEXT",
    "CREATE INDEX instances_warm ON instances (provider, definition) WHERE state = 'warm'",
    """CREATE TABLE warm_pools (
        id INTEGER PRIMARY KEY, provider TEXT NOT NULL, spec TEXT NOT NULL, definition TEXT NOT NULL,
        config TEXT NOT NULL, size INTEGER NOT NULL, UNIQUE (provider, spec, definition))""",
)

#: Version 4: pause (``idle_action``, ``retain_s``), so that the home's reaper pauses an idle local
#: or SSH instance that asks for it instead of removing it; older rows stop when idle.
_PAUSE = (
    "ALTER TABLE instances ADD COLUMN idle_action TEXT NOT NULL DEFAULT 'stop'",
    "ALTER TABLE instances ADD COLUMN retain_s REAL",
)

#: Version 5: snapshots (``praisonai.compute.snapshots``), one row each, so that any process of the
#: home lists and removes them; ``spec`` rebuilds the provider that holds it, as an instance's does.
_SNAPSHOTS = (
    """CREATE TABLE snapshots (
        id TEXT PRIMARY KEY, name TEXT UNIQUE, provider TEXT NOT NULL, spec TEXT NOT NULL,
        source TEXT NOT NULL, created_at REAL NOT NULL, size_bytes INTEGER)""",
)

_LAYOUT = _sqlite.Schema(
    "ledger", (_FIRST,), {2: (_add_lifetime_columns,), 3: _WARM, 4: _PAUSE, 5: _SNAPSHOTS}, _unversioned
)


def _entry(row: tuple[Any, ...]) -> LedgerEntry:
    """The row as an entry; ``ValueError`` saying which field is damaged (the lifetime's
    columns are checked by ``Lifetime`` itself)."""
    instance_id, provider, spec, owner, created_at, state, last_active, idle, ttl, auto, action, retain = row
    texts = {"instance_id": instance_id, "provider": provider, "owner": owner, "state": state}
    numbers = {"created_at": created_at, "last_active": last_active}
    for name, value in texts.items():
        if not isinstance(value, str):
            raise ValueError(f"{name} is not text")
    for name, value in numbers.items():
        if not isinstance(value, (int, float)):
            raise ValueError(f"{name} is not a number")
    try:
        parsed = json.loads(spec)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"its spec is not JSON ({exc})") from None
    if not isinstance(parsed, dict):
        raise ValueError("its spec is not a JSON object")
    lifetime = Lifetime(bool(auto), idle, ttl, action, retain)
    return LedgerEntry(instance_id, provider, parsed, owner, created_at, state, last_active, lifetime)
