"""The hosted backend's remote agents and environments in the sqlite store: one row per
(backend, kind, config hash), so that every process of a home reuses the resource the first one
made (``INSERT … ON CONFLICT DO NOTHING``: the first recorded wins)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from praisonai.managed import _sqlite_store as sql
from praisonai.managed._records import RemoteResource

_REMOTE_COLUMNS: Final = "backend, kind, config_hash, remote_id, version, name, config_json, created_at"


class RemoteResources:
    """:class:`~praisonai.managed.store.SqliteSessionStore`'s remote-resource methods (see the
    :class:`~praisonai.managed.store.SessionStore` protocol for their contract)."""

    path: Path
    _db: sql.Database

    def remote_resource(self, backend: str, kind: str, config_hash: str) -> RemoteResource | None:
        with self._db.read() as db:
            row = db.execute(
                f"SELECT {_REMOTE_COLUMNS} FROM remote_resources"
                " WHERE backend = ? AND kind = ? AND config_hash = ?",
                (backend, kind, config_hash),
            ).fetchone()
        return None if row is None else self._remote(row)

    def add_remote_resource(self, resource: RemoteResource) -> RemoteResource:
        r = resource
        with self._db.write() as db:
            db.execute(
                f"INSERT INTO remote_resources ({_REMOTE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (backend, kind, config_hash) DO NOTHING",
                (r.backend, r.kind, r.config_hash, r.remote_id, r.version, r.name,
                 sql.dumps(dict(r.config)), r.created_at),
            )  # fmt: skip
            row = db.execute(
                f"SELECT {_REMOTE_COLUMNS} FROM remote_resources"
                " WHERE backend = ? AND kind = ? AND config_hash = ?",
                (r.backend, r.kind, r.config_hash),
            ).fetchone()
        return self._remote(row)

    def list_remote_resources(self, backend: str, kind: str | None = None) -> list[RemoteResource]:
        """Oldest first."""
        where, params = ("AND kind = ?", (backend, kind)) if kind is not None else ("", (backend,))
        with self._db.read() as db:
            rows = db.execute(
                f"SELECT {_REMOTE_COLUMNS} FROM remote_resources WHERE backend = ? {where}"
                " ORDER BY created_at",
                params,
            ).fetchall()
        return [self._remote(row) for row in rows]

    def forget_remote_resource(self, backend: str, kind: str, remote_id: str) -> bool:
        """Drop the record (after the resource was archived or deleted remotely)."""
        with self._db.write() as db:
            return (
                db.execute(
                    "DELETE FROM remote_resources WHERE backend = ? AND kind = ? AND remote_id = ?",
                    (backend, kind, remote_id),
                ).rowcount
                > 0
            )

    def _remote(self, row: tuple[Any, ...]) -> RemoteResource:
        backend, kind, digest, remote_id, version, name, config_json, created_at = row
        config = sql.loads(self.path, f"remote {kind} {remote_id}", config_json)
        return RemoteResource(backend, kind, digest, remote_id, version, name, config, created_at)
