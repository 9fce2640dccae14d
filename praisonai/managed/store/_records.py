"""The records a session store hands out: frozen values, the same for every store."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields
from typing import Any

from praisonai.managed.events import Event


@dataclass(frozen=True)
class AgentRecord:
    """One version of a named agent's config. ``config_hash`` is the SHA-256 of its canonical
    JSON: the same config under the same (backend, name) is the same record."""

    id: str
    backend: str
    name: str
    version: int
    config: Mapping[str, Any]
    config_hash: str
    created_at: float


class _ReadsByKey:
    """Reads a record's fields by key too, as PraisonAI's users read the dicts its sessions are
    (``info["usage"]["input_tokens"]``, ``s["id"]``, ``info.get("status")``, ``"usage" in info``):
    each key is the field of that name, read from the record itself (no second copy)."""

    def keys(self) -> tuple[str, ...]:
        return tuple(f.name for f in fields(self))  # type: ignore[arg-type]

    def __getitem__(self, key: str) -> Any:
        if key not in self.keys():
            raise KeyError(key)
        return getattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        """Dict-style read; a key that is no field gives ``default``."""
        return getattr(self, key) if key in self.keys() else default

    def __contains__(self, key: object) -> bool:
        return key in self.keys()

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())


@dataclass(frozen=True)
class SessionRecord(_ReadsByKey):
    """A session as stored. ``usage`` is cumulative (:data:`USAGE_KEYS`); ``sandbox`` is what
    rebuilds its instance (``{"provider", "options", "instance_id"}`` for an instance of ours);
    ``lease_*`` say who drives it (see :func:`lease_holder`); ``last_seq`` is its last event's seq.
    A hosted session has its API id in ``remote_session_id`` and what the API last said of it in
    ``remote`` (``{"agent": {"id", "version"}, "environment_id", "status", "usage", "stats", …}``).
    Its fields read by key too (``record["usage"]["input_tokens"]``), as PraisonAI's session dicts."""

    id: str
    backend: str
    agent_id: str
    agent_version: int
    title: str | None
    status: str
    stop_reason: Mapping[str, Any] | None
    pending: tuple[Mapping[str, Any], ...]
    last_error: Mapping[str, Any] | None
    usage: Mapping[str, int]
    turns: int
    sandbox: Mapping[str, Any] | None
    sandbox_status: str | None
    metadata: Mapping[str, Any]
    remote_session_id: str | None
    lease_owner: str | None
    lease_epoch: int
    lease_expires_at: float | None
    last_seq: int
    created_at: float
    updated_at: float
    remote: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class RemoteResource:
    """A resource made on a hosted API for one config (``kind``: ``"agent"`` or
    ``"environment"``): its remote id, version (agents) and name, keyed by the config's hash and
    by ``scope``, where it lives: a fingerprint of the API endpoint and key it was made with
    (never the key). ``""``: recorded before scopes were (a store of schema version 2)."""

    backend: str
    kind: str
    config_hash: str
    remote_id: str
    version: int | None
    name: str
    config: Mapping[str, Any]
    created_at: float
    scope: str = ""


@dataclass(frozen=True)
class Lease:
    """The right to write to a session, as long as its ``epoch`` is the session's."""

    session_id: str
    owner: str
    epoch: int


@dataclass(frozen=True)
class StoredEvent:
    """An event of a session's log: its place (``seq``, from 1), the turn it belongs to, and
    when it was recorded."""

    seq: int
    turn: int
    event: Event
    recorded_at: float


@dataclass(frozen=True)
class TurnUsage:
    """The usage of one model in one turn: the sum of its requests."""

    turn: int
    model: str
    requests: int
    input_tokens: int
    output_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int
