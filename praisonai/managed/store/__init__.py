"""Durable managed sessions: the records, the :class:`SessionStore` protocol, and its sqlite
implementation, :class:`SqliteSessionStore` (made by :func:`open_store`, wherever a default store
is needed); the hosted backend's cache of remote resources is its own protocol,
:class:`RemoteResourceCache`, which the sqlite store also implements.

A store holds agents (configs, versioned by hash), sessions (status, pending actions, usage, the
sandbox to reattach …) and each session's append-only event log, which *is* the transcript. Any
process may read a session; one at a time drives it, holding its **lease**. Every write through
a lease is *fenced*: in the same transaction it checks that the session's ``lease_epoch`` is still
the lease's, so a process whose lease was taken over gets ``StaleSessionError`` and writes nothing.
A lease may be taken by another owner once it expired, or at once when its owner (``user@host:pid``,
as ``praisonai.compute.lifecycle.owner_tag()`` makes) ran on this host and is dead. The holder
renews it by writing (append, update, add_usage) or with :meth:`SessionStore.renew`.
"""

from praisonai.managed.store._protocol import (
    LEASE_TTL_S,
    STATUSES,
    UPDATABLE,
    USAGE_KEYS,
    SessionStore,
    lease_holder,
)
from praisonai.managed.store._records import (
    AgentRecord,
    Lease,
    RemoteResource,
    SessionRecord,
    StoredEvent,
    TurnUsage,
)
from praisonai.managed.store._remote import RemoteResourceCache, remote_cache
from praisonai.managed.store._sqlite import SqliteSessionStore, open_store

__all__ = [
    "LEASE_TTL_S",
    "STATUSES",
    "UPDATABLE",
    "USAGE_KEYS",
    "AgentRecord",
    "Lease",
    "RemoteResource",
    "RemoteResourceCache",
    "SessionRecord",
    "SessionStore",
    "SqliteSessionStore",
    "StoredEvent",
    "TurnUsage",
    "lease_holder",
    "open_store",
    "remote_cache",
]
