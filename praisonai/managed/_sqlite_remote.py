"""The hosted backend's remote agents and environments in the sqlite store: one row per
(backend, kind, scope, config hash), so that every process of a home reuses the resource the
first one made in that scope (``INSERT … ON CONFLICT DO NOTHING``: the first recorded wins).
The scope is where the resource lives (a fingerprint of the API endpoint and key): the same
config run with another key or endpoint has its own row, and its own remote resource."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from praisonai.managed import _sqlite_store as sql
from praisonai.managed._records import RemoteResource

_REMOTE_COLUMNS: Final = (
    "backend, kind, config_hash, remote_id, version, name, config_json, created_at, scope"
)
_ONE: Final = f"SELECT {_REMOTE_COLUMNS} FROM remote_resources WHERE backend = ? AND kind = ? AND scope = ?"


class RemoteResources:
    """:class:`~praisonai.managed.store.SqliteSessionStore`'s remote-resource methods (see the
    :class:`~praisonai.managed.store.SessionStore` protocol for their contract)."""

    path: Path
    _db: sql.Database

    def remote_resource(
        self, backend: str, kind: str, config_hash: str, scope: str = ""
    ) -> RemoteResource | None:
        with self._db.read() as db:
            row = db.execute(f"{_ONE} AND config_hash = ?", (backend, kind, scope, config_hash)).fetchone()
        return None if row is None else self._remote(row)

    def add_remote_resource(self, resource: RemoteResource) -> RemoteResource:
        r = resource
        with self._db.write() as db:
            db.execute(
                f"INSERT INTO remote_resources ({_REMOTE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (backend, kind, scope, config_hash) DO NOTHING",
                (r.backend, r.kind, r.config_hash, r.remote_id, r.version, r.name,
                 sql.dumps(dict(r.config)), r.created_at, r.scope),
            )  # fmt: skip
            row = db.execute(
                f"{_ONE} AND config_hash = ?", (r.backend, r.kind, r.scope, r.config_hash)
            ).fetchone()
        return self._remote(row)

    def list_remote_resources(
        self, backend: str, kind: str | None = None, scope: str | None = None
    ) -> list[RemoteResource]:
        """Oldest first."""
        where, params = _where(backend, kind=kind, scope=scope)
        with self._db.read() as db:
            rows = db.execute(
                f"SELECT {_REMOTE_COLUMNS} FROM remote_resources WHERE {where} ORDER BY created_at", params
            ).fetchall()
        return [self._remote(row) for row in rows]

    def forget_remote_resource(
        self, backend: str, kind: str, remote_id: str, scope: str | None = None
    ) -> bool:
        """Drop the records (after the resource was archived or deleted remotely)."""
        where, params = _where(backend, kind=kind, scope=scope, remote_id=remote_id)
        with self._db.write() as db:
            return db.execute(f"DELETE FROM remote_resources WHERE {where}", params).rowcount > 0

    def _remote(self, row: tuple[Any, ...]) -> RemoteResource:
        backend, kind, digest, remote_id, version, name, config_json, created_at, scope = row
        config = sql.loads(self.path, f"remote {kind} {remote_id}", config_json)
        return RemoteResource(backend, kind, digest, remote_id, version, name, config, created_at, scope)


def _where(backend: str, **columns: str | None) -> tuple[str, tuple[str, ...]]:
    """``backend = ? AND …`` for the columns given (None: any value), and its parameters."""
    given = {name: value for name, value in columns.items() if value is not None}
    where = " AND ".join(f"{name} = ?" for name in ("backend", *given))
    return where, (backend, *given.values())
