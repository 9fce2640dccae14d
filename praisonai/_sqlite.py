"""How praisonai opens its sqlite files (the instance ledger, the sessions store) and brings an
older file's layout up to date: one way, one versioning scheme.

A file's layout has a version, kept in its ``schema_meta`` table (key ``schema_version``). A
:class:`Schema` says what version 1 creates and which statements bring each version up to the
next; :func:`connect` creates the tables in an empty file and migrates an older one in one
``BEGIN IMMEDIATE`` transaction (another process may be doing the same: the write lock makes one
of them do it, the others find it done). A file written before versions were recorded is given
its version by :attr:`Schema.unversioned`.

A file that is someone else's database (tables, and no version we know), or one a newer praisonai
wrote, is refused with ``sqlite3.DatabaseError`` before any connection that could write to it
(not even a hot journal's rollback) is opened: its owner decides what to do with it. Every
connection is in autocommit mode (``isolation_level=None``: transactions are begun explicitly),
with a busy timeout, the WAL journal (readers run beside the writer) and ``synchronous=NORMAL``
(WAL stays consistent after a crash; a power cut may lose the last commits).
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

__all__ = ["BUSY_TIMEOUT_S", "Migration", "Schema", "connect", "version_of"]

#: How long a call waits for another process's write lock before sqlite says "database is locked".
BUSY_TIMEOUT_S: Final = 30.0

#: One step of a migration: a statement, or a function run in the migrating transaction.
Migration = str | Callable[[sqlite3.Connection], None]


def _no_version(tables: set[str]) -> int | None:
    return None


@dataclass(frozen=True)
class Schema:
    """A file's layout. ``first``: what version 1 creates; ``migrations``: version -> the steps
    that bring the version before it up to it (versions 2, 3 … without a gap); ``unversioned``:
    the version of a file with these tables and no recorded version (``None``: not ours)."""

    name: str  # what the file is, in a refusal: "session store", "ledger"
    first: Sequence[Migration]
    migrations: Mapping[int, Sequence[Migration]] = field(default_factory=dict)
    unversioned: Callable[[set[str]], int | None] = _no_version

    @property
    def version(self) -> int:
        """The layout this code reads and writes."""
        return 1 + len(self.migrations)


def connect(path: Path, schema: Schema) -> sqlite3.Connection:
    """A connection to ``path`` whose layout is ``schema``'s current version: the file (owner-only,
    like the rest of the home) and its folder are created when missing, its tables made or
    migrated. ``sqlite3.DatabaseError`` for a file that is not ours or is newer; ``OSError`` and
    other ``sqlite3.Error`` as they come."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not path.exists():  # sqlite keeps the file's mode for its -wal and -shm
        os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
    _check_read_only(path, schema)
    db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
    try:
        db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        db.execute("PRAGMA synchronous = NORMAL")
        _init(db, schema)
    except BaseException:
        db.close()
        raise
    return db


def version_of(db: sqlite3.Connection, schema: Schema) -> int | None:
    """The file's version by reading only: ``None`` for an empty file; ``sqlite3.DatabaseError``
    for someone else's database or one a newer praisonai wrote."""
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not tables:
        return None
    version = _recorded(db) if "schema_meta" in tables else schema.unversioned(tables)
    if version is None:
        raise sqlite3.DatabaseError(f"it is not a praisonai {schema.name}: it has no schema version")
    if version > schema.version:
        raise sqlite3.DatabaseError(
            f"a newer praisonai wrote it, schema version {version}; this one reads version {schema.version}"
        )
    return version


def _recorded(db: sqlite3.Connection) -> int | None:
    row = db.execute("SELECT value FROM schema_meta WHERE key = 'schema_version'").fetchone()
    return int(row[0]) if row is not None and str(row[0]).isdigit() else None


def _check_read_only(path: Path, schema: Schema) -> None:
    """Whether the file is ours (or empty), asked through a read-only connection."""
    db = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S)
    try:
        version_of(db, schema)
    finally:
        db.close()


def _init(db: sqlite3.Connection, schema: Schema) -> None:
    """Check the file is ours (or empty) without writing a byte, then WAL, then the layout. The
    check runs with ``query_only`` on, again (the file may have been replaced since the read-only
    check): switching someone else's database to WAL would already change it. The write lock is
    taken only when there is a layout to create or migrate: a reader opening the file never waits
    behind another process's long write transaction."""
    db.execute("PRAGMA query_only = ON")
    try:
        version = version_of(db, schema)
    finally:
        db.execute("PRAGMA query_only = OFF")
    _wal(db)
    if version == schema.version:
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        _migrate(db, schema)  # again, under the write lock: another process may have done it since
    except BaseException:
        db.rollback()
        raise
    db.execute("COMMIT")


def _migrate(db: sqlite3.Connection, schema: Schema) -> None:
    """Inside the caller's write transaction: version 1 in an empty file, then each migration."""
    version = version_of(db, schema)
    if version is None:
        _run(db, schema.first)
        version = 1
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "schema_meta" not in tables:
        db.execute("CREATE TABLE schema_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        db.execute("INSERT INTO schema_meta VALUES ('schema_version', ?)", (str(version),))
    for target in range(version + 1, schema.version + 1):
        _run(db, schema.migrations[target])
        db.execute("UPDATE schema_meta SET value = ? WHERE key = 'schema_version'", (str(target),))


def _run(db: sqlite3.Connection, steps: Sequence[Migration]) -> None:
    for step in steps:
        if isinstance(step, str):
            db.execute(step)
        else:
            step(db)


def _wal(db: sqlite3.Connection) -> None:
    """Processes racing to switch a new file to WAL fail at once, without the busy timeout: so
    retry that."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                db.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)
