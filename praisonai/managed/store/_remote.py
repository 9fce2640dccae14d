"""The hosted backend's cache of remote resources (:class:`RemoteResourceCache`): which remote
agent and environment it made for a config, so that every process reuses them instead of making
its own. A sessions store may keep it too (the sqlite store does); the hosted backend asks the
store it is given for this protocol (:func:`remote_cache`), never for more than it.

In the sqlite store: one row per (backend, kind, scope, config hash), so that every process of
a home reuses the resource the first one made in that scope (``INSERT … ON CONFLICT DO NOTHING``:
the first recorded wins).
The scope is where the resource lives (a fingerprint of the API endpoint and key): the same
config run with another key or endpoint has its own row, and its own remote resource."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final, Protocol, runtime_checkable

from praisonai._errors import ConfigError
from praisonai.managed.store import _database as sql
from praisonai.managed.store._records import RemoteResource

__all__ = ["RemoteResourceCache", "SqliteRemoteResources", "remote_cache"]

_REMOTE_COLUMNS: Final = (
    "backend, kind, config_hash, remote_id, version, name, config_json, created_at, scope"
)
_ONE: Final = f"SELECT {_REMOTE_COLUMNS} FROM remote_resources WHERE backend = ? AND kind = ? AND scope = ?"


@runtime_checkable
class RemoteResourceCache(Protocol):
    """The remote resources a hosted backend made, by (backend, kind, scope, config hash).
    Methods are synchronous, local and short; a cache is thread-safe and shared by processes.
    ``praisonai.managed.testing.REMOTE_CHECKS`` holds its conformance checks."""

    def remote_resource(
        self, backend: str, kind: str, config_hash: str, scope: str = ""
    ) -> RemoteResource | None:
        """The remote resource recorded for this config in ``scope``, if any."""
        ...

    def add_remote_resource(self, resource: RemoteResource) -> RemoteResource:
        """Record ``resource`` unless one is recorded for its (backend, kind, scope, config hash):
        the one recorded first wins and is returned (the caller archives a loser it made)."""
        ...

    def list_remote_resources(
        self, backend: str, kind: str | None = None, scope: str | None = None
    ) -> list[RemoteResource]:
        """Oldest first; ``scope`` None: in every scope."""
        ...

    def forget_remote_resource(
        self, backend: str, kind: str, remote_id: str, scope: str | None = None
    ) -> bool:
        """Drop the records of ``remote_id`` (in ``scope``; None: in every scope); whether any was."""
        ...

    def close(self) -> None: ...


def remote_cache(store: object) -> RemoteResourceCache:
    """The cache of remote resources that ``store`` keeps; ``ConfigError`` when it keeps none
    (the hosted backend needs one: a store that only holds sessions cannot run it)."""
    if not isinstance(store, RemoteResourceCache):
        raise ConfigError(
            f"the hosted backend records its remote agents and environments in the sessions store, and "
            f"{type(store).__name__} does not keep them (it implements no RemoteResourceCache)",
            op="managed",
        )
    return store


class SqliteRemoteResources:
    """:class:`RemoteResourceCache` in the sqlite store's file: the methods
    :class:`~praisonai.managed.store.SqliteSessionStore` gets from it."""

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
                (
                    r.backend,
                    r.kind,
                    r.config_hash,
                    r.remote_id,
                    r.version,
                    r.name,
                    sql.dumps(dict(r.config)),
                    r.created_at,
                    r.scope,
                ),
            )
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
