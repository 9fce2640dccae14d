"""The instance ledger: every instance this machine creates, recorded *before* it is created.

One sqlite file, ``$PRAISONAI_HOME/ledger.sqlite3``, shared by every process of this home. It is
safe under concurrent processes and threads: WAL journal, a busy timeout, one connection per thread
(never shared across threads) and one statement per transaction. A row
holds only what rebuilds the provider in another process (``ComputeProvider.reconnect_spec()``),
never secrets. ``ps``, ``stop`` and (later) ``gc`` read it and reconcile it with each provider's
own list.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from praisonai._home import praisonai_home

#: How long a call waits for another process's write lock before sqlite raises "database is locked".
BUSY_TIMEOUT_S = 30.0

_SCHEMA = """CREATE TABLE IF NOT EXISTS instances (
    instance_id TEXT PRIMARY KEY, provider TEXT NOT NULL, spec TEXT NOT NULL, owner TEXT NOT NULL,
    created_at REAL NOT NULL, state TEXT NOT NULL, last_active REAL NOT NULL)"""
_COLUMNS = "instance_id, provider, spec, owner, created_at, state, last_active"


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """One recorded instance. ``spec`` rebuilds its provider: ``provider_class(provider)(**spec)``.

    ``state`` is ``"provisioning"`` from the moment before creation until setup succeeded, then
    ``"running"``. ``owner`` is ``user@host:pid`` of the creating process.
    """

    instance_id: str
    provider: str
    spec: Mapping[str, Any]
    owner: str
    created_at: float
    state: str
    last_active: float

    def owner_alive(self) -> bool | None:
        """Whether the creating process still runs: ``None`` when it ran on another host."""
        host_pid = self.owner.rpartition("@")[2]
        host, _, pid = host_pid.rpartition(":")
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
    """The ledger file at ``path``. Every method is one short autocommit statement."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    @classmethod
    def default(cls) -> Ledger:
        """The ledger of the current ``$PRAISONAI_HOME`` (read at each call, not cached)."""
        return cls(praisonai_home() / "ledger.sqlite3")

    def record(
        self, instance_id: str, provider: str, spec: Mapping[str, Any], owner: str, created_at: float
    ) -> None:
        """Record an instance about to be created, in state ``"provisioning"`` (replaces a row
        with the same id). ``spec`` must be JSON-able; ``TypeError`` otherwise."""
        spec_json = json.dumps(dict(spec), sort_keys=True)
        self._run(
            f"INSERT OR REPLACE INTO instances ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, 'provisioning', ?)",
            instance_id, provider, spec_json, owner, created_at, created_at,
        )  # fmt: skip

    def mark(self, instance_id: str, state: str) -> None:
        """Set the instance's state; an unknown id stays unknown (a forgotten row is never revived)."""
        self._run("UPDATE instances SET state = ? WHERE instance_id = ?", state, instance_id)

    def touch(self, instance_id: str) -> None:
        """Stamp activity now (for idle detection); an unknown id is ignored."""
        self._run("UPDATE instances SET last_active = ? WHERE instance_id = ?", time.time(), instance_id)

    def forget(self, instance_id: str) -> None:
        """Remove the instance's row; idempotent."""
        self._run("DELETE FROM instances WHERE instance_id = ?", instance_id)

    def get(self, instance_id: str) -> LedgerEntry | None:
        """The instance's row, or ``None``."""
        rows = self._run(f"SELECT {_COLUMNS} FROM instances WHERE instance_id = ?", instance_id)
        return _entry(rows[0]) if rows else None

    def entries(self) -> list[LedgerEntry]:
        """Every row, oldest first."""
        return [_entry(row) for row in self._run(f"SELECT {_COLUMNS} FROM instances ORDER BY created_at")]

    def _run(self, sql: str, *params: object) -> list[tuple[Any, ...]]:
        """One statement, its own transaction (autocommit), on this thread's connection."""
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


def _open(path: Path) -> sqlite3.Connection:
    """Autocommit mode (``isolation_level=None``): each statement is its own short transaction."""
    if not path.exists():  # owner-only, like the rest of the home; sqlite keeps the mode for -wal
        os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
    db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    # NORMAL sync in WAL mode is crash-safe for the app (a power cut may lose the last rows,
    # which reconciliation with the providers' own lists recovers) and skips an fsync per write.
    db.execute("PRAGMA synchronous=NORMAL")
    _init(db)
    return db


def _init(db: sqlite3.Connection) -> None:
    """WAL (readers run beside a writer) and the table. Switching to WAL fails at once, without
    waiting for the busy timeout, when processes race to do it on a new file: so retry."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                db.execute("PRAGMA journal_mode=WAL")
            db.execute(_SCHEMA)
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def _entry(row: tuple[Any, ...]) -> LedgerEntry:
    instance_id, provider, spec, owner, created_at, state, last_active = row
    return LedgerEntry(instance_id, provider, json.loads(spec), owner, created_at, state, last_active)
