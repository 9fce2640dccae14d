"""Paused instances as the inventory shows them (the disk each holds) and as ``gc`` treats them.

``gc`` keeps them until they are ``retain_s`` past their last
activity, then removes them.

A paused instance is idle by definition, so the idle rule that makes other instances orphans
(``inventory.orphan_reason``) never applies to it; ``retain_s`` does instead: ``gc --retain``'s,
else the instance's own (its config's ``retain_s``, carried in its ``praisonai.retain`` label),
else none (kept until removed). Its last activity is the ledger's stamp.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import anyio

from praisonai._ledger import LedgerEntry
from praisonai._lifetime import past_retain
from praisonai._types import InstanceStatus
from praisonai.compute._survey import CALL_TIMEOUT_S, Instance
from praisonai.compute.lifecycle import LABEL_RETAIN

PAUSED = InstanceStatus.PAUSED.value


def paused_reason(entry: LedgerEntry, now: float, retain_s: float | None) -> str | None:
    """Why the paused instance of ``entry`` goes now, or ``None`` to keep it: past its ttl (a
    pause never extends a lifetime), or idle ``retain_s`` since its last activity."""
    idle_s = max(0.0, now - entry.last_active)
    why = entry.lifetime.past_ttl(now - entry.created_at) or past_retain(idle_s, retain_s)
    return None if why is None else f"paused, {why}"


async def retains(found: Sequence[Instance], given: float | None) -> dict[str, float | None]:
    """Each paused instance's retain age: ``given`` (``gc --retain``), else its own label's."""
    paused = [f for f in found if f.status == PAUSED and f.provider is not None]
    if given is not None:
        return {f.instance_id: given for f in paused}
    kept: dict[str, float | None] = {}

    async def one(f: Instance) -> None:
        assert f.provider is not None
        try:
            with anyio.fail_after(CALL_TIMEOUT_S):
                label = (await f.provider.get_status(f.instance_id)).labels.get(LABEL_RETAIN)
        except Exception:  # unreadable now: kept, as one without a retain age is
            label = None
        kept[f.instance_id] = float(label) if label else None

    async with anyio.create_task_group() as tg:
        for f in paused:
            tg.start_soon(one, f)
    return kept


async def with_disk(found: Sequence[Instance]) -> list[Instance]:
    """``found``, each paused instance's ``reason`` saying the disk it holds where its provider
    can say (its pauser's ``paused_disk``)."""
    shown = list(found)

    async def one(index: int, f: Instance) -> None:
        pauser = f.provider.pauser if f.provider is not None else None
        if pauser is None:
            return
        try:
            with anyio.fail_after(CALL_TIMEOUT_S):
                size = await pauser.paused_disk(f.instance_id)
        except Exception:  # the disk is a courtesy: the row is shown without it
            return
        if size is not None:
            shown[index] = dataclasses.replace(f, reason=f"holds {size / 2**20:.1f} MiB")

    async with anyio.create_task_group() as tg:
        for index, f in enumerate(found):
            if f.status == PAUSED and f.provider is not None and not f.reason:
                tg.start_soon(one, index, f)
    return shown
