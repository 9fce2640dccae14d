"""The sqlite file behind :class:`~praisonai.managed.store.SqliteSessionStore`: how it is opened
(by :mod:`praisonai._sqlite`, with :mod:`._schema`'s layout), how its rows read back, the lease's
fenced writes, and how its failures read to a user.

One file (default ``$PRAISONAI_HOME/managed/store.db``), shared by every process of the home:
WAL journal (readers run beside the writer), ``synchronous=NORMAL`` (WAL stays consistent after a
crash; a power cut may lose the last commits), a busy timeout, and every write in one short
``BEGIN IMMEDIATE`` transaction, which takes the write lock up front so that the reads a write
depends on (a lease's epoch, the last seq) cannot change under it. A :class:`Database` keeps one
connection per process, guarded by a lock, so one store object may be shared by threads.

A file that is not a database, is damaged, or was written by a newer schema is refused with one
sentence naming it, and never changed: its owner decides whether to move it aside.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from praisonai import _sqlite
from praisonai._errors import (
    HomeUnusableError,
    PraisonAIError,
    SessionBusyError,
    SessionNotFoundError,
    StaleSessionError,
)
from praisonai._home import disk_full
from praisonai._ledger import owner_alive
from praisonai.managed.events import Event, new_id
from praisonai.managed.store import _schema as schema

#: How long a call waits for another process's write lock before giving up.
BUSY_TIMEOUT_S = _sqlite.BUSY_TIMEOUT_S

#: The token counters, in the order of their columns (sessions and turn_usage alike).
USAGE_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
    "requests",
)
#: SessionRecord's fields that ``update`` may set, and the column (JSON when it ends in ``_json``).
UPDATABLE = {
    "status": "status",
    "stop_reason": "stop_reason_json",
    "pending": "pending_json",
    "last_error": "last_error_json",
    "sandbox": "sandbox_json",
    "sandbox_status": "sandbox_status",
    "title": "title",
    "turns": "turns",
    "metadata": "metadata_json",
    "remote_session_id": "remote_session_id",
    "remote": "remote_json",
}
AGENT_COLUMNS = "id, backend, name, version, config_json, config_hash, created_at"
SESSION_COLUMNS = (
    "id, backend, agent_id, agent_version, title, status, stop_reason_json, pending_json, "
    f"last_error_json, {', '.join(USAGE_KEYS)}, turns, sandbox_json, sandbox_status, metadata_json, "
    "remote_session_id, lease_owner, lease_epoch, lease_expires_at, last_seq, created_at, updated_at, "
    "remote_json"
)


class Database:
    """The store file at ``path``, opened (and created, with its schema) at once, so that an
    unusable file is refused by the constructor. :meth:`write` and :meth:`read` hand out the
    connection inside one transaction, under a lock: a store object may be shared by threads."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._pid = 0
        with self._lock, translated(path):
            self._connection()

    @contextlib.contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction: committed when the block ends, rolled back when
        it raises (what it raised goes on unchanged)."""
        with self._transaction("BEGIN IMMEDIATE") as db:
            yield db

    @contextlib.contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """One read transaction: the statements in the block see one snapshot."""
        with self._transaction("BEGIN") as db:
            yield db

    def close(self) -> None:
        """Close the connection; the next call opens a new one."""
        with self._lock:
            if self._db is not None and self._pid == os.getpid():
                self._db.close()
            self._db = None

    @contextlib.contextmanager
    def _transaction(self, begin: str) -> Iterator[sqlite3.Connection]:
        with self._lock, translated(self.path):
            db = self._connection()
            db.execute(begin)
            try:
                yield db
                db.execute("COMMIT")
            except BaseException:  # also a failed COMMIT: the next call must not find it open
                if db.in_transaction:
                    db.rollback()
                raise

    def _connection(self) -> sqlite3.Connection:
        """This process's connection, opened on first use; a forked child opens its own."""
        if self._db is None or self._pid != os.getpid():
            self._db, self._pid = _open(self.path), os.getpid()
        return self._db


@contextlib.contextmanager
def translated(path: Path) -> Iterator[None]:
    """sqlite's and the file system's errors as one ``HomeUnusableError`` naming the file; our
    own errors, and a caller's misuse (a value sqlite cannot bind), pass unchanged."""
    try:
        yield
    except (PraisonAIError, sqlite3.InterfaceError, sqlite3.ProgrammingError):
        raise
    except (OSError, sqlite3.Error) as exc:
        if disk_full(exc, path.parent):
            raise HomeUnusableError(full_disk(path), op="store") from exc
        why = (exc.strerror if isinstance(exc, OSError) else None) or str(exc)
        raise HomeUnusableError(unusable(path, why[:1].lower() + why[1:]), op="store") from exc


def full_disk(path: Path) -> str:
    """One sentence for a full disk under the session store: which file, and what to do."""
    return (
        f"the disk holding the session store {path} is full, so it could not be written; free some "
        "space on it, or keep the store on another disk (set PRAISONAI_HOME, or give the store a path)"
    )


def unusable(path: Path, why: str) -> str:
    """One sentence: which store file, why it cannot be used, and what to do."""
    if "not a database" in why or "malformed" in why or "not a praisonai" in why:
        return (
            f"the session store {path} cannot be read ({why}); praisonai leaves it untouched: "
            f"move it aside (mv {path} {path}.damaged) to start a new, empty one"
        )
    if "newer" in why:
        return f"the session store {path} cannot be read ({why}); upgrade praisonai to use it"
    if "locked" in why:
        return f"the session store {path} stayed locked by another process for {BUSY_TIMEOUT_S:g}s; try again"
    return f"the session store {path} cannot be used ({why}); check it and its folder can be written"


def damaged(path: Path, what: str, why: str) -> HomeUnusableError:
    """The error for a row that cannot be read back (``what``: which one): one sentence about
    that row, since the rest of the store may well be fine."""
    return HomeUnusableError(
        f"{what} in the session store {path} cannot be read back ({why}); the other sessions are not "
        "affected: delete it (praisonai managed sessions delete ID), or move the store aside to start anew",
        op="store",
    )


def _open(path: Path) -> sqlite3.Connection:
    db = _sqlite.connect(path, schema.SCHEMA)
    db.text_factory = _text
    return db


def _text(raw: bytes) -> str:
    """A TEXT value as stored. Bytes that are not UTF-8 (written by another tool) must not fail
    the whole query (sqlite3's default would): they are kept as lone surrogates, which
    :func:`event` refuses for that one event and the CLI prints as U+FFFD."""
    return raw.decode("utf-8", "surrogateescape")


def dumps(value: Any) -> str:
    """Canonical JSON: sorted keys, no spaces (so equal configs hash equal)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def loads(path: Path, what: str, text: str | None) -> Any:
    """A JSON column's value (``None`` for SQL NULL); a damaged one is a ``HomeUnusableError``."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except (TypeError, ValueError) as exc:
        raise damaged(path, what, str(exc)) from None


def encode(column: str, value: Any) -> Any:
    """``value`` as ``column`` stores it: JSON text for a ``*_json`` column (NULL for None, but
    never for pending actions or metadata: none is an empty list or object)."""
    if column == "pending_json":
        return dumps([dict(item) for item in value or ()])
    if column == "metadata_json":
        return dumps(dict(value or {}))
    if not column.endswith("_json") or value is None:
        return value
    return dumps(dict(value))


def event(path: Path, session_id: str, seq: int, payload: str) -> Event:
    """An ``events`` row's payload as the event it stored."""
    what = f"event {seq} of session {session_id}"
    data = loads(path, what, payload)
    try:  # a lone surrogate (undecodable input stored by an older praisonai) can never be sent on
        json.dumps(data, ensure_ascii=False).encode("utf-8")
        return Event.from_json(data)
    except UnicodeEncodeError:
        raise damaged(path, what, "it holds text that is not valid UTF-8") from None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise damaged(path, what, repr(exc)) from None


def session_fields(path: Path, row: tuple[Any, ...]) -> dict[str, Any]:
    """A ``sessions`` row (columns :data:`SESSION_COLUMNS`) as ``SessionRecord`` keyword arguments."""
    (id_, backend, agent_id, agent_version, title, status, stop_reason, pending, last_error, *rest) = row
    usage, rest = dict(zip(USAGE_KEYS, rest, strict=False)), rest[len(USAGE_KEYS) :]
    (
        turns,
        sandbox,
        sandbox_status,
        metadata,
        remote_id,
        lease_owner,
        lease_epoch,
        lease_expires_at,
        last_seq,
        created_at,
        updated_at,
        remote,
    ) = rest
    what = f"session {id_}"
    return {
        "id": id_,
        "backend": backend,
        "agent_id": agent_id,
        "agent_version": agent_version,
        "title": title,
        "status": status,
        "stop_reason": loads(path, what, stop_reason),
        "pending": tuple(loads(path, what, pending) or ()),
        "last_error": loads(path, what, last_error),
        "usage": usage,
        "turns": turns,
        "sandbox": loads(path, what, sandbox),
        "sandbox_status": sandbox_status,
        "metadata": loads(path, what, metadata) or {},
        "remote_session_id": remote_id,
        "lease_owner": lease_owner,
        "lease_epoch": lease_epoch,
        "lease_expires_at": lease_expires_at,
        "last_seq": last_seq,
        "created_at": created_at,
        "updated_at": updated_at,
        "remote": loads(path, what, remote),
    }


# ---- the lease and the fenced writes (each inside the caller's write transaction) -----------


def live(owner: str | None, expires_at: float | None, now: float) -> str | None:
    """``owner`` while its lease is live: unexpired, and its process not known to be dead."""
    if owner is None or (expires_at is not None and expires_at <= now) or owner_alive(owner) is False:
        return None
    return owner


def take_lease(db: sqlite3.Connection, session_id: str, owner: str, *, ttl_s: float, force: bool) -> int:
    """Give ``owner`` the session's lease under the next epoch, and return that epoch."""
    row = db.execute(
        "SELECT lease_owner, lease_epoch, lease_expires_at FROM sessions WHERE id = ?", (session_id,)
    ).fetchone()
    if row is None:
        raise SessionNotFoundError(f"no session {session_id}")
    holder, epoch, expires_at = row
    now = time.time()
    if not force and holder != owner and live(holder, expires_at, now):
        raise SessionBusyError(
            f"session {session_id} is busy: {holder} drives it (its lease runs {expires_at - now:.0f}s "
            "more unless renewed); wait, or take it over with force"
        )
    db.execute(
        "UPDATE sessions SET lease_owner = ?, lease_epoch = ?, lease_expires_at = ? WHERE id = ?",
        (owner, epoch + 1, now + ttl_s, session_id),
    )
    return int(epoch) + 1


def fence(db: sqlite3.Connection, session_id: str, owner: str, epoch: int, ttl_s: float) -> int:
    """Check that (``owner``, ``epoch``) still holds the session, extend the lease by ``ttl_s``,
    and return the session's last seq; ``StaleSessionError`` if it was released or taken over."""
    row = db.execute(
        "SELECT lease_owner, lease_epoch, last_seq FROM sessions WHERE id = ?", (session_id,)
    ).fetchone()
    if row is None:
        raise SessionNotFoundError(f"no session {session_id}")
    if (row[0], row[1]) != (owner, epoch):
        now_by = f"{row[0]} took it over" if row[0] else "it was released"
        raise StaleSessionError(
            f"the lease of {owner} on session {session_id} is no longer valid ({now_by}, epoch "
            f"{row[1]} after {epoch}); this process must stop driving it"
        )
    now = time.time()
    db.execute(
        "UPDATE sessions SET lease_expires_at = ?, updated_at = ? WHERE id = ?",
        (now + ttl_s, now, session_id),
    )
    return int(row[2])


def insert_events(
    db: sqlite3.Connection, session_id: str, epoch: int, turn: int, events: Sequence[Event], seq: int
) -> int:
    """Append ``events`` after ``seq``, skipping those whose id the log has; return the last seq."""
    now = time.time()
    for event in events:
        seq += db.execute(
            "INSERT INTO events (session_id, seq, event_id, type, turn, recorded_at, lease_epoch,"
            " payload_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (session_id, event_id) DO NOTHING",
            (session_id, seq + 1, event.id, event.type, turn, now, epoch, event.dumps()),
        ).rowcount
    db.execute("UPDATE sessions SET last_seq = ? WHERE id = ?", (seq, session_id))
    return seq


def add_usage(db: sqlite3.Connection, session_id: str, turn: int, model: str, counts: Sequence[int]) -> None:
    """Add ``counts`` (in :data:`USAGE_KEYS` order) to the turn's row for ``model`` and to the
    session's totals."""
    db.execute(
        f"INSERT INTO turn_usage (session_id, turn, model, {', '.join(USAGE_KEYS)})"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (session_id, turn, model) DO UPDATE SET "
        + ", ".join(f"{key} = {key} + excluded.{key}" for key in USAGE_KEYS),
        (session_id, turn, model, *counts),
    )
    db.execute(
        "UPDATE sessions SET " + ", ".join(f"{key} = {key} + ?" for key in USAGE_KEYS) + " WHERE id = ?",
        (*counts, session_id),
    )


def agent_row(
    db: sqlite3.Connection, backend: str, name: str, config_json: str, digest: str
) -> tuple[Any, ...]:
    """The ``agents`` row of this config (columns :data:`AGENT_COLUMNS`), added under the next
    version of (backend, name) when there is none."""
    row = db.execute(
        f"SELECT {AGENT_COLUMNS} FROM agents WHERE backend = ? AND name = ? AND config_hash = ?",
        (backend, name, digest),
    ).fetchone()
    if row is None:
        (last,) = db.execute(
            "SELECT max(version) FROM agents WHERE backend = ? AND name = ?", (backend, name)
        ).fetchone()
        row = (new_id("magt"), backend, name, (last or 0) + 1, config_json, digest, time.time())
        db.execute(f"INSERT INTO agents ({AGENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)", row)
    return tuple(row)


def exists(db: sqlite3.Connection, session_id: str) -> None:
    """``SessionNotFoundError`` unless the session is there."""
    if db.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is None:
        raise SessionNotFoundError(f"no session {session_id}")
