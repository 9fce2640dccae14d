"""The sessions store in one sqlite file (:class:`SqliteSessionStore`), and :func:`open_store`,
where every default store is made: the library's (``ManagedAgent``, ``praisonai.managed.sessions``)
and the CLI's alike."""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from praisonai import _telemetry
from praisonai._errors import ConfigError, HomeUnusableError, SessionNotFoundError
from praisonai._home import praisonai_home
from praisonai._limits import MAX_SESSIONS_LISTED
from praisonai.managed.events import Event, new_id
from praisonai.managed.store import _database as sql
from praisonai.managed.store._protocol import LEASE_TTL_S, STATUSES, UPDATABLE, USAGE_KEYS
from praisonai.managed.store._records import AgentRecord, Lease, SessionRecord, StoredEvent, TurnUsage
from praisonai.managed.store._remote import SqliteRemoteResources

__all__ = ["SqliteSessionStore", "open_store"]


def open_store(path: str | os.PathLike[str] | None = None) -> SqliteSessionStore:
    """The sessions store every default opens (``path`` default:
    ``$PRAISONAI_HOME/managed/store.db``): the one place that says which store that is."""
    return SqliteSessionStore(path)


def _check_id(prefix: str, value: str, what: str) -> None:
    """Refuse an id that events.new_id could not have made, before it reaches a query."""
    if not _well_formed(prefix, value):
        raise SessionNotFoundError(
            f"no {what} {value!r} (a {what} id looks like {prefix}_ and 26 letters or digits)"
        )


def _well_formed(prefix: str, value: object) -> bool:
    """Whether ``value`` is an id events.new_id(prefix) could have made."""
    return isinstance(value, str) and re.fullmatch(f"{prefix}_[0-9a-hjkmnp-tv-z]{{26}}", value) is not None


class SqliteSessionStore(SqliteRemoteResources):
    """The store in one sqlite file, shared by every process of the home (see ``_database``); it
    also keeps the hosted backend's remote resources (:class:`RemoteResourceCache`).

    ``path`` defaults to ``$PRAISONAI_HOME/managed/store.db``. The file is opened (and created)
    at once: ``HomeUnusableError`` names it when it cannot be used, is damaged, or was written
    by a newer version. ``close()`` releases the connection; a later call opens a new one.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else praisonai_home() / "managed" / "store.db"
        self._db = sql.Database(self.path)
        #: What the listings (:meth:`list_sessions`, :meth:`list_agents`) left out so far: one
        #: sentence per row that could not be read back.
        self.skipped: list[str] = []

    def __enter__(self) -> SqliteSessionStore:  # closes the connection at the end of the block
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self._db.close()

    def close(self) -> None:
        self._db.close()

    # ---- agents ----------------------------------------------------------------------------

    def upsert_agent(self, backend: str, name: str, config: Mapping[str, Any]) -> AgentRecord:
        """Race-safe: the write lock is taken before the lookup. ``TypeError`` if ``config`` is
        not JSON-able."""
        config_json = sql.dumps(dict(config))
        digest = hashlib.sha256(config_json.encode()).hexdigest()
        with self._db.write() as db:
            row = sql.agent_row(db, backend, name, config_json, digest)
        return self._agent(row)

    def get_agent(self, agent_id: str) -> AgentRecord:
        _check_id("magt", agent_id, "agent")
        with self._db.read() as db:
            row = db.execute(f"SELECT {sql.AGENT_COLUMNS} FROM agents WHERE id = ?", (agent_id,)).fetchone()
        if row is None:
            raise SessionNotFoundError(f"no agent {agent_id}")
        return self._agent(row)

    def list_agents(self, backend: str | None = None) -> list[AgentRecord]:
        """By name, then version; an agent whose row cannot be read back is left out and named
        in :attr:`skipped`."""
        where, params = ("WHERE backend = ?", (backend,)) if backend is not None else ("", ())
        with self._db.read() as db:
            rows = db.execute(
                f"SELECT {sql.AGENT_COLUMNS} FROM agents {where} ORDER BY name, backend, version", params
            ).fetchall()
        found = []
        for row in rows:
            try:
                found.append(self._agent(row))
            except HomeUnusableError as exc:
                self.skipped.append(str(exc))
        return found

    # ---- sessions --------------------------------------------------------------------------

    def create_session(
        self,
        agent: AgentRecord,
        owner: str,
        *,
        title: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        sandbox: Mapping[str, Any] | None = None,
        ttl_s: float = LEASE_TTL_S,
    ) -> tuple[SessionRecord, Lease]:
        session_id, now = new_id("msess"), time.time()
        with self._db.write() as db:
            if db.execute("SELECT 1 FROM agents WHERE id = ?", (agent.id,)).fetchone() is None:
                raise SessionNotFoundError(f"no agent {agent.id}")
            columns = {
                "id": session_id,
                "backend": agent.backend,
                "agent_id": agent.id,
                "agent_version": agent.version,
                "title": title,
                "status": "idle",
                "metadata_json": sql.encode("metadata_json", metadata),
                "sandbox_json": sql.encode("sandbox_json", sandbox),
                "lease_owner": owner,
                "lease_epoch": 1,
                "lease_expires_at": now + ttl_s,
                "created_at": now,
                "updated_at": now,
            }
            names, marks = ", ".join(columns), ", ".join("?" * len(columns))
            db.execute(f"INSERT INTO sessions ({names}) VALUES ({marks})", tuple(columns.values()))
            record = self._session(db, session_id)
        return record, Lease(session_id, owner, 1)

    def get_session(self, session_id: str) -> SessionRecord:
        _check_id("msess", session_id, "session")
        with self._db.read() as db:
            return self._session(db, session_id)

    def list_sessions(
        self, *, agent_id: str | None = None, status: str | None = None, limit: int = 20
    ) -> list[SessionRecord]:
        """``ConfigError`` for a ``limit`` outside 1..:data:`MAX_SESSIONS_LISTED` or an unknown
        ``status``. A row that cannot be read back is left out and named in :attr:`skipped`
        (one sentence each): one damaged session must not hide the others."""
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ConfigError(f"limit must be at least 1, not {limit!r}", op="sessions")
        if limit > MAX_SESSIONS_LISTED:
            raise ConfigError(
                f"limit must be at most {MAX_SESSIONS_LISTED}, not {limit}; page with --status or --agent",
                op="sessions",
            )
        if status is not None and status not in STATUSES:
            raise ConfigError(f"unknown status {status!r} (one of: {', '.join(STATUSES)})", op="sessions")
        filters = {"agent_id": agent_id, "status": status}
        where = " AND ".join(f"{column} = ?" for column, value in filters.items() if value is not None)
        params = [value for value in filters.values() if value is not None]
        with self._db.read() as db:
            rows = db.execute(
                f"SELECT {sql.SESSION_COLUMNS} FROM sessions {'WHERE ' + where if where else ''}"
                " ORDER BY updated_at DESC, id DESC LIMIT ?",
                (*params, limit),
            ).fetchall()
        found = []
        for row in rows:
            try:
                found.append(SessionRecord(**sql.session_fields(self.path, row)))
            except (HomeUnusableError, TypeError, ValueError) as exc:
                self.skipped.append(str(exc))
        return found

    def delete_session(self, session_id: str) -> bool:
        """Its row, events and usage, in one transaction; ``False`` when it was not there."""
        if not _well_formed("msess", session_id):
            return False
        with self._db.write() as db:
            db.execute("DELETE FROM events WHERE session_id = ?", (session_id,))
            db.execute("DELETE FROM turn_usage WHERE session_id = ?", (session_id,))
            return db.execute("DELETE FROM sessions WHERE id = ?", (session_id,)).rowcount > 0

    # ---- leases ----------------------------------------------------------------------------

    def acquire(
        self, session_id: str, owner: str, *, ttl_s: float = LEASE_TTL_S, force: bool = False
    ) -> Lease:
        _check_id("msess", session_id, "session")
        with self._db.write() as db:
            epoch = sql.take_lease(db, session_id, owner, ttl_s=ttl_s, force=force)
        return Lease(session_id, owner, epoch)

    def renew(self, lease: Lease, *, ttl_s: float = LEASE_TTL_S) -> None:
        """``StaleSessionError`` if the lease was released or taken over."""
        with self._db.write() as db:
            self._fence(db, lease, ttl_s)

    def release(self, lease: Lease) -> None:
        """Give the session up; a no-op when the lease is not ours any more (or it is gone)."""
        with self._db.write() as db:
            db.execute(
                "UPDATE sessions SET lease_owner = NULL, lease_expires_at = NULL"
                " WHERE id = ? AND lease_owner = ? AND lease_epoch = ?",
                (lease.session_id, lease.owner, lease.epoch),
            )

    # ---- fenced writes ---------------------------------------------------------------------

    def append(self, lease: Lease, events: Sequence[Event], *, turn: int) -> int:
        """Append in order, each at the next seq; an event whose id the log already has is
        skipped (a retried append adds nothing). Returns the session's last seq; renews the
        lease. ``ValueError`` for an ephemeral event (nothing is written)."""
        return self.update(lease, events=events, turn=turn).last_seq

    def update(
        self, lease: Lease, *, events: Sequence[Event] = (), turn: int = 0, **fields: Any
    ) -> SessionRecord:
        """Append ``events`` (as :meth:`append`, in turn ``turn``) and set the given
        :data:`UPDATABLE` fields, in one transaction; renews the lease. ``ConfigError`` for another
        field or an unknown status; ``TypeError`` for a value that is not JSON-able. ``usage``
        (counts of :data:`USAGE_KEYS`) *replaces* the session's cumulative counters it names: a
        hosted API's snapshot, which must never be added to what was counted before."""
        usage = fields.pop("usage", None) or {}
        unknown = sorted(set(fields) - set(UPDATABLE) | set(usage) - set(USAGE_KEYS))
        if unknown:
            raise ConfigError(
                f"cannot update {', '.join(unknown)} (only: {', '.join(UPDATABLE)})", op="update"
            )
        if "status" in fields and fields["status"] not in STATUSES:
            raise ConfigError(
                f"unknown status {fields['status']!r} (one of: {', '.join(STATUSES)})", op="update"
            )
        columns = [UPDATABLE[name] for name in fields] + list(usage)
        values = [sql.encode(UPDATABLE[name], value) for name, value in fields.items()]
        values += [int(count) for count in usage.values()]
        if any(event.ephemeral for event in events):
            raise ValueError("ephemeral events (event_start, event_delta) are streamed, never stored")
        with self._db.write() as db:
            fence = self._fence(db, lease)
            if events:
                sql.insert_events(db, lease.session_id, lease.epoch, turn, events, fence)
            if columns:
                assignments = ", ".join(f"{column} = ?" for column in columns)
                db.execute(f"UPDATE sessions SET {assignments} WHERE id = ?", (*values, lease.session_id))
            record = self._session(db, lease.session_id)
        for event in events:  # stored: exported too, as OTel events (their type and ids, no content)
            ids = {"praisonai.session_id": lease.session_id, "praisonai.event_id": event.id}
            _telemetry.event(f"praisonai.{event.type}", ids)
        return record

    def add_usage(self, lease: Lease, *, turn: int, model: str, usage: Mapping[str, int]) -> None:
        """Add one request's usage (or several: ``requests``, default 1) to the turn's row for
        ``model`` and to the session's total; renews the lease. ``ValueError`` for a key not in
        :data:`USAGE_KEYS` or a negative count."""
        unknown = sorted(set(usage) - set(USAGE_KEYS))
        if unknown or any(int(value) < 0 for value in usage.values()):
            raise ValueError(f"usage takes counts >= 0 of {', '.join(USAGE_KEYS)}, not {dict(usage)}")
        counts = [int(usage.get(key, 1 if key == "requests" else 0)) for key in USAGE_KEYS]
        with self._db.write() as db:
            self._fence(db, lease)
            sql.add_usage(db, lease.session_id, turn, model, counts)

    # ---- reads of the log ------------------------------------------------------------------

    def turn_usage(self, session_id: str) -> list[TurnUsage]:
        """By turn, then model."""
        _check_id("msess", session_id, "session")
        with self._db.read() as db:
            sql.exists(db, session_id)
            rows = db.execute(
                f"SELECT turn, model, {', '.join(USAGE_KEYS)} FROM turn_usage WHERE session_id = ?"
                " ORDER BY turn, model",
                (session_id,),
            ).fetchall()
        return [TurnUsage(turn, model, requests, *tokens) for turn, model, *tokens, requests in rows]

    def events(self, session_id: str, *, after_seq: int = 0, limit: int | None = None) -> list[StoredEvent]:
        """The log after ``after_seq``, by seq, at most ``limit`` of them."""
        _check_id("msess", session_id, "session")
        with self._db.read() as db:
            sql.exists(db, session_id)
            rows = db.execute(
                "SELECT seq, turn, payload_json, recorded_at FROM events WHERE session_id = ? AND seq > ?"
                " ORDER BY seq LIMIT ?",
                (session_id, after_seq, -1 if limit is None else limit),
            ).fetchall()
        return [
            StoredEvent(seq, turn, sql.event(self.path, session_id, seq, payload), at)
            for seq, turn, payload, at in rows
        ]

    # ---- helpers ---------------------------------------------------------------------------

    def _fence(self, db: sqlite3.Connection, lease: Lease, ttl_s: float = LEASE_TTL_S) -> int:
        return sql.fence(db, lease.session_id, lease.owner, lease.epoch, ttl_s)

    def _session(self, db: sqlite3.Connection, session_id: str) -> SessionRecord:
        row = db.execute(f"SELECT {sql.SESSION_COLUMNS} FROM sessions WHERE id = ?", (session_id,)).fetchone()
        if row is None:
            raise SessionNotFoundError(f"no session {session_id}")
        return SessionRecord(**sql.session_fields(self.path, row))

    def _agent(self, row: tuple[Any, ...]) -> AgentRecord:
        agent_id, backend, name, version, config_json, digest, created_at = row
        config = sql.loads(self.path, f"agent {agent_id}", config_json)
        return AgentRecord(agent_id, backend, name, version, config, digest, created_at)
