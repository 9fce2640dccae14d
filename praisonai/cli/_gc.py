"""``praisonai compute gc``: what is an orphan, and removing it.

Three kinds, all of *this* home only (instances carry its ``praisonai.home`` label):

* a recorded instance whose creating process (on this host) is gone and that has been idle past
  its ``idle_timeout_s`` (with ``auto_shutdown``; activity as stamped in the ledger), or has lived
  past its ``ttl_s``: removed;
* an instance labelled with this home that the ledger does not know: removed (rows are written
  before instances are created, so only a lost row leaves one);
* a ledger row whose instance no longer exists: forgotten;
* a ledger row of a provision that never finished (it failed, or its creator died during it)
  whose provider cannot be reached: forgotten, since nothing of it can be reached to remove
  (what it made carries this home's label, so a later ``gc`` removes it once the provider answers);
  reachable, such an instance is removed.

The tally counts every row or provider that could not be checked as failed: exit 1 exactly when
it shows failures.

Every decision is checked again against a fresh ledger row right before acting, so an instance
provisioned or used meanwhile by another process is left alone.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import typer

from praisonai import _portal
from praisonai._ledger import Ledger, LedgerEntry
from praisonai.cli import _output
from praisonai.cli.compute import GONE, UNREACHABLE, Found, _stop_each, abandoned_reason
from praisonai.compute import _home_reaper

Kind = Literal["remove", "forget"]


@dataclass(frozen=True, slots=True)
class Orphan:
    """One thing ``gc`` acts on, and why."""

    kind: Kind
    found: Found
    why: str
    recorded: bool  # it has a ledger row (else: known only from its provider's list)


def orphan_reason(entry: LedgerEntry, now: float) -> str | None:
    """Why a recorded instance that still exists is an orphan, or ``None`` to keep it: the home
    reaper's rule, plus a failed provision."""
    if entry.state == "failed":
        return "its provision failed"
    idle_s, age_s = max(0.0, now - entry.last_active), now - entry.created_at
    return _home_reaper.orphan_reason(entry, idle_s=idle_s, age_s=age_s)


def plan(
    entries: Sequence[LedgerEntry], found: Sequence[Found], home: str, now: float
) -> tuple[list[Orphan], list[str]]:
    """The orphans among ``found`` (``ps``'s survey of ``entries`` and the providers' lists), and
    one line per recorded instance that could not be checked."""
    recorded = {e.instance_id: e for e in entries}
    orphans: list[Orphan] = []
    failures: list[str] = []
    for f in found:
        entry = recorded.get(f.instance_id)
        if entry is None:
            if f.home == home:
                orphans.append(Orphan("remove", f, "labelled with this home but not in its ledger", False))
        elif f.status == GONE:
            orphans.append(Orphan("forget", f, "the instance no longer exists", True))
        elif f.status == UNREACHABLE and f.provider is not None and entry.abandoned():
            orphans.append(Orphan("forget", f, abandoned_reason(entry, f.reason), True))
        elif f.status == UNREACHABLE:
            failures.append(f"could not check {f.instance_id}: {f.reason}")
        elif why := orphan_reason(entry, now):
            orphans.append(Orphan("remove", f, why, True))
    return orphans, failures


def still_orphan(orphan: Orphan, ledger: Ledger) -> bool:
    """Whether the decision holds against the ledger as it is now."""
    row = ledger.get(orphan.found.instance_id)
    if orphan.kind == "forget":
        return True  # forgetting is idempotent, and the instance was seen gone
    if not orphan.recorded:
        return row is None  # recorded meanwhile: a provision in flight
    return row is not None and orphan_reason(row, time.time()) is not None


def act(orphans: Sequence[Orphan], ledger: Ledger) -> dict[str, str]:
    """Forget or remove each orphan (removal is the provider's ``shutdown``, which drops the row
    too); returns ``{instance_id: why}`` for each that failed."""
    for orphan in orphans:
        if orphan.kind == "forget":
            ledger.forget(orphan.found.instance_id)
    removals = [o.found for o in orphans if o.kind == "remove"]
    errors = _portal.call(_stop_each, removals)
    return {f.instance_id: error for f, error in zip(removals, errors, strict=True) if error}


def report(orphans: Sequence[Orphan], errors: dict[str, str], *, problems: int, dry_run: bool) -> bool:
    """One line per orphan on stdout (a failure on stderr instead), then the tally, whose failed
    count adds the ``problems`` reported before (rows or providers that could not be checked).
    Returns whether anything failed."""
    done = {"remove": 0, "forget": 0}
    for orphan in orphans:
        f = orphan.found
        if f.instance_id in errors:
            _output.error(f"could not remove {f.instance_id}: {errors[f.instance_id]}")
            continue
        verb = f"would {orphan.kind}" if dry_run else {"remove": "removed", "forget": "forgot"}[orphan.kind]
        typer.echo(f"{verb} {f.instance_id} ({f.provider_name}): {orphan.why}")
        done[orphan.kind] += 1
    failed = len(errors) + problems
    if dry_run:
        also = f", {failed} failed" if failed else ""
        typer.echo(f"would remove {done['remove']}, would forget {done['forget']}{also}")
    else:
        typer.echo(f"{done['remove']} removed, {done['forget']} forgotten, {failed} failed")
    return failed > 0
