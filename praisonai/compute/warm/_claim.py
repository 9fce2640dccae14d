"""Claiming a warm instance from the home's shared pools: what ``Sandbox.create`` and
``praisonai sandbox run`` do before they provision.

A claim matches a pool only when the provider, its options and the value-free definition are
the same (:class:`~praisonai.compute.warm._rows.Pool`), and only when the provider can bind the
caller's env: a caller that asked for something no pool has gets ``None`` and provisions as
before. The claim itself is one ledger transaction, which also takes the handoff key out of the
ledger; then this process owns the instance: it adopts its main channel when one was handed off
(the key's one use), binds the definition's and the caller's env (which also proves the instance
still runs: one stopped by its watchdog meanwhile is forgotten and the next one tried), and
reaps it by its lifetime like one it provisioned. A refill starts in a detached child
(``_fill.start_refill``), also when the pool was found empty.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

import anyio
import anyio.to_thread

from praisonai._errors import InstanceNotFoundError
from praisonai._ledger import Ledger
from praisonai._types import Capability, InstanceInfo
from praisonai.compute import _activity, _reaper
from praisonai.compute.base import ComputeProvider
from praisonai.compute.config import ComputeConfig
from praisonai.compute.lifecycle import owner_tag
from praisonai.compute.warm import _rows
from praisonai.compute.warm._fill import start_refill
from praisonai.compute.warm._rows import Claimed, Pool


async def claim(
    provider: ComputeProvider, config: ComputeConfig, env: Mapping[str, str] | None = None
) -> InstanceInfo | None:
    """A warm instance of ``config`` on ``provider`` with ``config.env`` and ``env`` bound, now
    owned by this process; ``None`` when the home has none (provision instead)."""
    bound = {**config.env, **(env or {})}
    if bound and Capability.PROCESSES not in provider.capabilities:
        return None  # the env could not be bound: a pooled instance would lack it
    ledger, pool = Ledger.default(), Pool.of(provider, config)
    while True:
        got, pool_id = await anyio.to_thread.run_sync(_claim_row, ledger, pool)
        info = None if got is None else await _take(provider, got, bound, ledger)
        if got is None or info is not None:
            if pool_id is not None:
                start_refill(pool_id)
            return info


def _claim_row(ledger: Ledger, pool: Pool) -> tuple[Claimed | None, int | None]:
    """The claim, and the pool to refill (looked up only when nothing was claimed)."""
    got = _rows.claim(ledger, pool, owner_tag(), time.time())
    if got is not None:
        return got, got.pool_id
    return None, _rows.pool_id(ledger, pool)


async def _take(
    provider: ComputeProvider, got: Claimed, env: Mapping[str, str], ledger: Ledger
) -> InstanceInfo | None:
    """Own the claimed instance: ``None`` when it turned out gone (its row is forgotten)."""
    instance_id = got.instance_id
    _activity.adopt(instance_id, provider, got.lifetime, ledger)
    try:
        if got.handoff:
            provider.adopt(instance_id, got.handoff)
        if Capability.PROCESSES in provider.capabilities:
            await provider.processes.bind_env(instance_id, env)  # an empty binding still proves it runs
    except InstanceNotFoundError:  # stopped by its watchdog (idle, ttl) or by hand meanwhile
        _activity.release(instance_id)
        await anyio.to_thread.run_sync(ledger.forget, instance_id)
        return None
    except BaseException:
        with anyio.CancelScope(shield=True):
            await provider.shutdown(instance_id)
        raise
    _activity.ready(instance_id)
    if got.lifetime.reaps:
        _reaper.ensure_running()
    return InstanceInfo(instance_id, provider.name, created_at=got.created_at)
