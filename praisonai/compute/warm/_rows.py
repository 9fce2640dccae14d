"""The warm pools' rows in the ledger (its schema version 3): warm instances and pool sizes.

A warm instance is a row of ``instances`` in state ``warm``, with its pool's definition key and,
where its provider hands off a main channel, the ``handoff`` key another process adopts it with
(until a claim takes it out). A pool is a row of ``warm_pools``: provider, spec, definition key,
the value-free definition (so any process can refill it) and its size. Every function is one
statement, but the claim: one transaction (the ledger's write lock held throughout) that reads a
row's key and moves the row from ``warm`` to ``running`` under its new owner with the key cleared,
so two processes never get the same instance, and the key is nowhere in the ledger once claimed.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from praisonai._ledger import Ledger
from praisonai._lifetime import Lifetime
from praisonai._limits import WARM_CLAIM_MARGIN_S
from praisonai.compute.base import ComputeProvider
from praisonai.compute.config import ComputeConfig

#: A row still within its idle limit and ttl ``:margin`` seconds from ``:now``, where the margin is
#: at most a quarter of either (its watchdog stops it at either: a claim leaves a row about to
#: reach one to it, while a pool of short-lived instances can still be claimed from).
_FRESH = (
    "(NOT auto_shutdown OR last_active + idle_timeout_s > :now + min(:margin, idle_timeout_s / 4))"
    " AND (ttl_s IS NULL OR created_at + ttl_s > :now + min(:margin, ttl_s / 4))"
)
_MATCH = "state = 'warm' AND provider = :provider AND spec = :spec AND definition = :definition"


@dataclass(frozen=True, slots=True)
class Pool:
    """Which instances are interchangeable: the same provider with the same options (``spec``,
    as the ledger stores them) and the same value-free definition (``definition``: its key)."""

    provider: str
    spec: str
    definition: str

    @classmethod
    def of(cls, provider: ComputeProvider, config: ComputeConfig) -> Pool:
        spec = json.dumps(dict(provider.options.to_record()), sort_keys=True)  # as Ledger.record
        return cls(provider.name, spec, definition_key(config))

    def params(self, **more: object) -> dict[str, object]:
        return {"provider": self.provider, "spec": self.spec, "definition": self.definition, **more}


@dataclass(frozen=True, slots=True)
class Claimed:
    """A row a claim moved to ``running``: what the claimer needs to own the instance."""

    instance_id: str
    handoff: str | None
    created_at: float
    lifetime: Lifetime
    pool_id: int | None  # the pool to refill (None: its size is no longer recorded)


def definition_key(config: ComputeConfig) -> str:
    """The pool a config belongs to: its definition hash (env *names* in, values out), and its
    label values hashed in too (an instance carries its labels from creation, so a claim must
    not hand out one labelled otherwise)."""
    if not config.labels:
        return config.definition_hash()
    both = json.dumps([config.definition_hash(), sorted(config.labels.items())])
    return hashlib.sha256(both.encode()).hexdigest()[:16]


def value_free(config: ComputeConfig) -> ComputeConfig:
    """What a pooled instance is provisioned from: no env values (bound at claim), no metadata."""
    return config.model_copy(update={"env": {}, "metadata": {}})


def claim(ledger: Ledger, pool: Pool, owner: str, now: float) -> Claimed | None:
    """Take one warm instance of ``pool`` for ``owner``, atomically, and its handoff key with it:
    one transaction reads the key, moves the row from ``warm`` to ``running`` under its new owner
    and clears the key, so that no other process finds it in the ledger afterwards (the key is
    one use: its instance's ``adopt`` refuses every process but the row's owner), and two claimers
    never get the same row."""
    with ledger.transaction() as run:
        rows = run(
            f"SELECT rowid, instance_id, handoff, created_at, auto_shutdown, idle_timeout_s, ttl_s, "
            "(SELECT id FROM warm_pools p WHERE p.provider = instances.provider AND p.spec = instances.spec "
            f"AND p.definition = instances.definition) FROM instances WHERE {_MATCH} AND {_FRESH} "
            "ORDER BY rowid LIMIT 1",
            pool.params(now=now, margin=WARM_CLAIM_MARGIN_S),
        )
        if not rows:
            return None
        rowid, instance_id, handoff, created_at, auto, idle, ttl, pool_id = rows[0]
        run(
            "UPDATE instances SET state = 'running', owner = :owner, last_active = :now, handoff = NULL "
            "WHERE rowid = :rowid",
            {"owner": owner, "now": now, "rowid": rowid},
        )
    return Claimed(instance_id, handoff, created_at, Lifetime(bool(auto), idle, ttl), pool_id)


def make_warm(ledger: Ledger, instance_id: str, pool: Pool, handoff: str | None) -> bool:
    """Offer a provisioned (``running``) instance to every process; ``False`` when its row is gone."""
    rows = ledger.execute(
        "UPDATE instances SET state = 'warm', definition = :definition, handoff = :handoff "
        "WHERE instance_id = :id AND state = 'running' RETURNING 1",
        pool.params(handoff=handoff, id=instance_id),
    )
    return bool(rows)


def ready(ledger: Ledger, pool: Pool, now: float, margin: float = WARM_CLAIM_MARGIN_S) -> int:
    """Warm instances of ``pool`` a claim could take now; with ``margin=0``, those still within
    their lifetime (what a refill counts: a row its watchdog is about to stop is no reason to make
    another, or a pool of instances shorter-lived than the margin would be refilled forever)."""
    rows = ledger.execute(
        f"SELECT count(*) FROM instances WHERE {_MATCH} AND {_FRESH}", pool.params(now=now, margin=margin)
    )
    return int(rows[0][0])


def set_size(ledger: Ledger, pool: Pool, config: ComputeConfig, size: int) -> int:
    """Record ``pool``'s size and value-free definition; returns the pool's id."""
    rows = ledger.execute(
        "INSERT INTO warm_pools (provider, spec, definition, config, size) "
        "VALUES (:provider, :spec, :definition, :config, :size) "
        "ON CONFLICT (provider, spec, definition) DO UPDATE SET size = :size, config = :config "
        "RETURNING id",
        pool.params(config=value_free(config).model_dump_json(), size=size),
    )
    return int(rows[0][0])


def pool_id(ledger: Ledger, pool: Pool) -> int | None:
    """The id of ``pool``'s recorded size, or ``None`` when nobody asked for one."""
    rows = ledger.execute(
        "SELECT id FROM warm_pools WHERE provider = :provider AND spec = :spec AND definition = :definition",
        pool.params(),
    )
    return int(rows[0][0]) if rows else None


@dataclass(frozen=True, slots=True)
class Recorded:
    """A pool as recorded: what a refill in another process needs."""

    pool: Pool
    spec: dict[str, Any]
    config: ComputeConfig
    size: int


def recorded(ledger: Ledger, pool_id: int) -> Recorded | None:
    """The pool with this id, or ``None``."""
    rows = ledger.execute(
        "SELECT provider, spec, definition, config, size FROM warm_pools WHERE id = ?", (pool_id,)
    )
    if not rows:
        return None
    provider, spec, definition, config, size = rows[0]
    parsed = ComputeConfig.model_validate_json(config)
    return Recorded(Pool(provider, spec, definition), json.loads(spec), parsed, int(size))


def forget_pool(ledger: Ledger, pool: Pool) -> int | None:
    """Drop ``pool``'s recorded size (no refill will make more); its id, or ``None``."""
    rows = ledger.execute(
        "DELETE FROM warm_pools WHERE provider = :provider AND spec = :spec AND definition = :definition "
        "RETURNING id",
        pool.params(),
    )
    return int(rows[0][0]) if rows else None


def take_all(ledger: Ledger, pool: Pool, owner: str) -> list[str]:
    """Claim every warm instance of ``pool`` at once, however close to its end (to shut it down),
    their keys taken out of the ledger as a claim's (a shutdown that fails leaves none behind)."""
    rows = ledger.execute(
        f"UPDATE instances SET state = 'running', owner = :owner, handoff = NULL WHERE {_MATCH} "
        "RETURNING instance_id",
        pool.params(owner=owner),
    )
    return [row[0] for row in rows]
