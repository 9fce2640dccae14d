"""The :class:`SessionStore` protocol: what a sessions store keeps (agents, sessions, their event
logs and usage) and how its leases fence writes (see the package's docstring); sessions only,
the hosted backend's remote resources are :class:`~praisonai.managed.store.RemoteResourceCache`."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, Final, Protocol

from praisonai.managed.events import Event
from praisonai.managed.store import _database as sql
from praisonai.managed.store._records import AgentRecord, Lease, SessionRecord, StoredEvent, TurnUsage

__all__ = ["LEASE_TTL_S", "STATUSES", "UPDATABLE", "USAGE_KEYS", "SessionStore", "lease_holder"]

#: How long a lease lasts unless renewed (a holder renews it at every write).
LEASE_TTL_S: Final = 60.0
#: A session's status values.
STATUSES: Final = ("idle", "running", "requires_action", "error", "interrupted", "terminated")
#: The keys of a usage mapping (``requests``: model requests; an ``add_usage`` without it is one).
USAGE_KEYS: Final = sql.USAGE_KEYS
#: What :meth:`SessionStore.update` may set, and the column it goes to.
UPDATABLE: Final = sql.UPDATABLE


class SessionStore(Protocol):
    """Where sessions live. Methods are synchronous, local and short; a store is thread-safe.
    Unknown (or malformed) ids raise ``SessionNotFoundError`` (so does a fenced write to a deleted
    session); ``praisonai.managed.testing`` is the conformance suite every store must pass."""

    def upsert_agent(self, backend: str, name: str, config: Mapping[str, Any]) -> AgentRecord:
        """The record of this config: reused by (backend, name, hash), else the next version."""
        ...

    def get_agent(self, agent_id: str) -> AgentRecord: ...
    def list_agents(self, backend: str | None = None) -> list[AgentRecord]: ...

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
        """A new ``idle`` session of ``agent``, its lease held by ``owner``."""
        ...

    def get_session(self, session_id: str) -> SessionRecord: ...

    def list_sessions(
        self, *, agent_id: str | None = None, status: str | None = None, limit: int = 20
    ) -> list[SessionRecord]:
        """Newest updated first."""
        ...

    def acquire(
        self, session_id: str, owner: str, *, ttl_s: float = LEASE_TTL_S, force: bool = False
    ) -> Lease:
        """A new lease (epoch + 1). ``SessionBusyError`` when a live other owner holds it,
        unless ``force`` (the old holder is then fenced off)."""
        ...

    def renew(self, lease: Lease, *, ttl_s: float = LEASE_TTL_S) -> None: ...
    def release(self, lease: Lease) -> None: ...
    def append(self, lease: Lease, events: Sequence[Event], *, turn: int) -> int: ...
    def update(
        self, lease: Lease, *, events: Sequence[Event] = (), turn: int = 0, **fields: Any
    ) -> SessionRecord: ...
    def add_usage(self, lease: Lease, *, turn: int, model: str, usage: Mapping[str, int]) -> None: ...
    def turn_usage(self, session_id: str) -> list[TurnUsage]: ...
    def events(
        self, session_id: str, *, after_seq: int = 0, limit: int | None = None
    ) -> list[StoredEvent]: ...
    def delete_session(self, session_id: str) -> bool: ...

    def close(self) -> None: ...


def lease_holder(record: SessionRecord, now: float | None = None) -> str | None:
    """The owner of the session's lease while it is live (unexpired, and its process not known
    to be dead), else ``None``: nobody drives the session, or its driver is gone."""
    return sql.live(record.lease_owner, record.lease_expires_at, time.time() if now is None else now)
