"""The session store's sqlite schema, and how an older file is brought up to it.

Version 1 is the local backend's layout. Version 2 adds what the hosted backend keeps: a session's
remote details (``sessions.remote_json``) and the remote agents and environments made for each
config (``remote_resources``, one row per (backend, kind, config hash): what makes concurrent
runs reuse one remote agent instead of creating one each). A version-1 file is migrated in place,
in the transaction that opens it; a file of a newer version is refused, never touched
(:mod:`praisonai._sqlite` does both, for the ledger too).
Version 3 keys each remote resource also by its ``scope``: the API endpoint and key it was made
with, as a fingerprint (see ``hosted._client.workspace_scope``). Rows of version 2 get the scope
``''`` ("made before scopes were recorded"): no run matches it, so their resources are looked up
on the API again (found there when the key's workspace has them), never used blind.
"""

from __future__ import annotations

from typing import Final

from praisonai._sqlite import Schema

_V1: Final = (
    """CREATE TABLE agents (
        id TEXT PRIMARY KEY, backend TEXT NOT NULL, name TEXT NOT NULL, version INTEGER NOT NULL,
        config_json TEXT NOT NULL, config_hash TEXT NOT NULL, created_at REAL NOT NULL,
        UNIQUE (backend, name, config_hash), UNIQUE (backend, name, version))""",
    """CREATE TABLE sessions (
        id TEXT PRIMARY KEY, backend TEXT NOT NULL, agent_id TEXT NOT NULL REFERENCES agents (id),
        agent_version INTEGER NOT NULL, title TEXT, status TEXT NOT NULL, stop_reason_json TEXT,
        pending_json TEXT NOT NULL DEFAULT '[]', last_error_json TEXT,
        input_tokens INTEGER NOT NULL DEFAULT 0, output_tokens INTEGER NOT NULL DEFAULT 0,
        cache_read_input_tokens INTEGER NOT NULL DEFAULT 0,
        cache_creation_input_tokens INTEGER NOT NULL DEFAULT 0, requests INTEGER NOT NULL DEFAULT 0,
        turns INTEGER NOT NULL DEFAULT 0, sandbox_json TEXT, sandbox_status TEXT,
        metadata_json TEXT NOT NULL DEFAULT '{}', remote_session_id TEXT,
        lease_owner TEXT, lease_epoch INTEGER NOT NULL DEFAULT 0, lease_expires_at REAL,
        last_seq INTEGER NOT NULL DEFAULT 0, created_at REAL NOT NULL, updated_at REAL NOT NULL)""",
    "CREATE INDEX sessions_by_updated ON sessions (updated_at DESC)",
    "CREATE INDEX sessions_by_agent ON sessions (agent_id, updated_at DESC)",
    """CREATE TABLE events (
        session_id TEXT NOT NULL, seq INTEGER NOT NULL, event_id TEXT NOT NULL, type TEXT NOT NULL,
        turn INTEGER NOT NULL, recorded_at REAL NOT NULL, lease_epoch INTEGER NOT NULL,
        payload_json TEXT NOT NULL,
        PRIMARY KEY (session_id, seq), UNIQUE (session_id, event_id))""",  # rowid: payloads may be big
    """CREATE TABLE turn_usage (
        session_id TEXT NOT NULL, turn INTEGER NOT NULL, model TEXT NOT NULL,
        requests INTEGER NOT NULL, input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL,
        cache_read_input_tokens INTEGER NOT NULL, cache_creation_input_tokens INTEGER NOT NULL,
        PRIMARY KEY (session_id, turn, model)) WITHOUT ROWID""",
)

#: version -> the statements that bring the version before it up to it.
_MIGRATIONS: Final = {
    2: (
        "ALTER TABLE sessions ADD COLUMN remote_json TEXT",
        "CREATE UNIQUE INDEX sessions_by_remote ON sessions (remote_session_id)",
        """CREATE TABLE remote_resources (
            backend TEXT NOT NULL, kind TEXT NOT NULL, config_hash TEXT NOT NULL,
            remote_id TEXT NOT NULL, version INTEGER, name TEXT NOT NULL, config_json TEXT NOT NULL,
            created_at REAL NOT NULL, PRIMARY KEY (backend, kind, config_hash))""",
    ),
    3: (  # sqlite cannot change a primary key in place: a new table, the rows copied
        """CREATE TABLE remote_resources_v3 (
            backend TEXT NOT NULL, kind TEXT NOT NULL, scope TEXT NOT NULL, config_hash TEXT NOT NULL,
            remote_id TEXT NOT NULL, version INTEGER, name TEXT NOT NULL, config_json TEXT NOT NULL,
            created_at REAL NOT NULL, PRIMARY KEY (backend, kind, scope, config_hash))""",
        "INSERT INTO remote_resources_v3 SELECT backend, kind, '', config_hash, remote_id, version, name,"
        " config_json, created_at FROM remote_resources",
        "DROP TABLE remote_resources",
        "ALTER TABLE remote_resources_v3 RENAME TO remote_resources",
    ),
}

#: The store's layout, opened and migrated by :func:`praisonai._sqlite.connect`.
SCHEMA: Final = Schema("session store", _V1, _MIGRATIONS)
