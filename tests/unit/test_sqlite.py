"""praisonai._sqlite: the one open/migrate helper of the ledger and the sessions store."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from praisonai import _sqlite
from praisonai._errors import ConfigError, HomeUnusableError
from praisonai._ledger import Ledger
from praisonai.managed.store import SqliteSessionStore, remote_cache

SCHEMA = _sqlite.Schema(
    "test file",
    ("CREATE TABLE t (a INTEGER)",),
    {2: ("ALTER TABLE t ADD COLUMN b INTEGER",), 3: (lambda db: db.execute("INSERT INTO t VALUES (1, 2)"),)},
)


def _version(path: Path) -> str:
    with sqlite3.connect(path) as db:
        return str(db.execute("SELECT value FROM schema_meta WHERE key = 'schema_version'").fetchone()[0])


def test_a_new_file_is_made_at_the_current_version_in_wal_and_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "f.db"
    db = _sqlite.connect(path, SCHEMA)
    assert db.execute("SELECT a, b FROM t").fetchall() == [(1, 2)]
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    db.close()
    assert _version(path) == "3" and path.stat().st_mode & 0o777 == 0o600


def test_an_older_file_is_migrated_and_a_newer_or_foreign_one_refused_untouched(tmp_path: Path) -> None:
    older = tmp_path / "older.db"
    _sqlite.connect(older, _sqlite.Schema("test file", SCHEMA.first)).close()
    _sqlite.connect(older, SCHEMA).close()
    assert _version(older) == "3"
    newer = "CREATE TABLE schema_meta (key, value); INSERT INTO schema_meta VALUES ('schema_version', '9')"
    for name, setup in (("newer.db", newer), ("foreign.db", "CREATE TABLE theirs (x)")):
        path = tmp_path / name
        with sqlite3.connect(path) as db:
            db.executescript(setup)
        before = path.read_bytes()
        with pytest.raises(sqlite3.DatabaseError, match=r"newer praisonai|not a praisonai test file"):
            _sqlite.connect(path, SCHEMA)
        assert path.read_bytes() == before


def test_a_ledger_of_before_versions_gets_one_and_a_foreign_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    with sqlite3.connect(path) as db:  # the first layout, with one of the later columns already added
        db.execute(
            "CREATE TABLE instances (instance_id TEXT PRIMARY KEY, provider TEXT NOT NULL,"
            " spec TEXT NOT NULL, owner TEXT NOT NULL, created_at REAL NOT NULL, state TEXT NOT NULL,"
            " last_active REAL NOT NULL, ttl_s REAL)"
        )
        db.execute("INSERT INTO instances VALUES ('local_1', 'local', '{}', 'o', 1.0, 'running', 1.0, NULL)")
    entry = Ledger(path).get("local_1")
    assert entry is not None and entry.lifetime.idle_timeout_s == 300 and _version(path) == "5"
    assert entry.lifetime.idle_action == "stop" and entry.lifetime.retain_s is None  # version 4's defaults
    with sqlite3.connect(path) as db:  # version 3: the warm pools' columns and table; 4: pause's
        columns = {row[1] for row in db.execute("PRAGMA table_info(instances)")}
        assert {"definition", "handoff", "idle_action", "retain_s"} <= columns
        assert db.execute("SELECT count(*) FROM warm_pools").fetchone() == (0,)
        assert db.execute("SELECT count(*) FROM snapshots").fetchone() == (0,)  # 5: snapshots'
    foreign = tmp_path / "foreign.sqlite3"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE theirs (x)")
    with pytest.raises(HomeUnusableError, match=r"is damaged .*not a praisonai ledger"):
        Ledger(foreign).entries()


def test_the_hosted_backend_asks_the_store_for_its_remote_cache(tmp_path: Path) -> None:
    with SqliteSessionStore(tmp_path / "store.db") as store:
        assert remote_cache(store) is store
    with pytest.raises(ConfigError, match="object does not keep them"):
        remote_cache(object())
