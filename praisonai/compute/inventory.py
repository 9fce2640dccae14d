"""The instances a home knows of, as a library: :func:`ps`, :func:`stop`, :func:`stop_all` and
:func:`gc` (``praisonai compute ps | stop | gc`` only print what these return).

::

    from praisonai.compute import inventory

    for row in inventory.ps().instances:
        print(row.instance_id, row.provider_name, row.status)
    inventory.stop(["docker_0123456789ab"])
    outcome = inventory.gc(dry_run=True)        # what would go, and why

Each reconciles two sources: the ledger of this home (``PRAISONAI_HOME``; every instance it
created, each checked with its provider rebuilt by ``registry.provider_for_record``) and the own
list of every provider that needs no arguments and is usable now (or the ``providers`` given),
which shows instances the ledger missed. Nothing raises for one bad row or one silent provider:
each result carries ``problems``, one sentence each. Blocking; from async code call them in a
worker thread. Ledger rows whose instance no longer exists are forgotten by every call.

What ``gc`` removes, all of *this* home only (instances carry its ``praisonai.home`` label):

* a recorded instance whose creating process (on this host) is gone and that has been idle past
  its ``idle_timeout_s`` (with ``auto_shutdown``; activity as stamped in the ledger), or has lived
  past its ``ttl_s``, or whose provision failed: removed;
* an instance labelled with this home that the ledger does not know: removed (rows are written
  before instances are created, so only a lost row leaves one);
* a paused instance idle past its retain age (``gc --retain``'s, else its config's ``retain_s``;
  none: kept), never for its idleness alone (``_paused``): removed;
* a ledger row whose instance no longer exists: forgotten;
* a ledger row of a provision that never finished (it failed, or its creator died during it)
  whose provider cannot be reached: forgotten, since nothing of it can be reached to remove
  (what it made carries this home's label, so a later ``gc`` removes it once the provider answers).

Every ``gc`` decision is checked again against a fresh ledger row right before acting, so an
instance provisioned or used meanwhile by another process is left alone.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from praisonai import _portal
from praisonai._errors import InstanceNotFoundError
from praisonai._ledger import Ledger, LedgerEntry, home_tag
from praisonai.compute import _home_reaper, _paused
from praisonai.compute._survey import (
    CALL_TIMEOUT_S,
    GONE,
    UNREACHABLE,
    Instance,
    abandoned_reason,
    check,
    gather,
    ledger_rows,
    listable_providers,
    recorded,
    stop_each,
)
from praisonai.compute.base import ComputeProvider
from praisonai.compute.requests import check_instance_id

__all__ = [
    "CALL_TIMEOUT_S",
    "GONE",
    "UNREACHABLE",
    "GcOutcome",
    "Instance",
    "Orphan",
    "StopOutcome",
    "Survey",
    "gc",
    "ps",
    "stop",
    "stop_all",
]


@dataclass(frozen=True, slots=True)
class Survey:
    """What :func:`ps` found: every instance, oldest first, and one sentence per provider that
    could not list or ledger row that could not be read (the other rows are still there)."""

    instances: tuple[Instance, ...]
    problems: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class StopOutcome:
    """What :func:`stop` did. ``stopped``: shut down, or (also in ``forgotten``, with why) rows of
    abandoned provisions whose provider cannot be reached, with nothing left to stop.
    ``failed``: each with why; ``unknown``: ids in neither the ledger nor any provider's list;
    ``problems``: providers that could not list."""

    stopped: tuple[Instance, ...]
    forgotten: tuple[tuple[Instance, str], ...]
    failed: tuple[tuple[Instance, str], ...]
    unknown: tuple[str, ...]
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not (self.failed or self.unknown or self.problems)

    def as_json(self) -> dict[str, Any]:
        """What ``compute stop --json`` prints (the shape ``pause`` and ``resume`` print too)."""
        return {
            "done": [{"instance": t.instance_id, "status": "stopped"} for t in self.stopped],
            "forgotten": [{"instance": t.instance_id, "reason": why} for t, why in self.forgotten],
            "failed": [{"instance": t.instance_id, "error": error} for t, error in self.failed],
            "unknown": list(self.unknown),
            "problems": list(self.problems),
        }


@dataclass(frozen=True, slots=True)
class Orphan:
    """One thing :func:`gc` acts on, and why. ``recorded``: it has a ledger row (else it is known
    only from its provider's list)."""

    kind: Literal["remove", "forget"]
    instance: Instance
    why: str
    recorded: bool


@dataclass(frozen=True, slots=True)
class GcOutcome:
    """What :func:`gc` did (or, with ``dry_run``, would do). ``orphans``: acted on, in order;
    ``failed``: removals that failed, each with why; ``problems``: rows or providers that could not
    be checked. ``failures`` counts both."""

    orphans: tuple[Orphan, ...]
    failed: tuple[tuple[Orphan, str], ...]
    problems: tuple[str, ...]
    dry_run: bool

    @property
    def failures(self) -> int:
        return len(self.failed) + len(self.problems)

    def as_json(self) -> dict[str, Any]:
        """What ``compute gc --json`` prints: each orphan, what was (or would be) done and whether
        it was; ``failures`` as in the tally."""
        errors = {o.instance.instance_id: why for o, why in self.failed}
        orphans = [
            {
                "instance": o.instance.instance_id,
                "provider": o.instance.provider_name,
                "action": o.kind,
                "reason": o.why,
                "done": not self.dry_run and o.instance.instance_id not in errors,
                "error": errors.get(o.instance.instance_id),
            }
            for o in self.orphans
        ]
        return {
            "dry_run": self.dry_run,
            "orphans": orphans,
            "failures": self.failures,
            "problems": list(self.problems),
        }


# ---- ps ----------------------------------------------------------------------------------------


def ps(*, providers: Sequence[ComputeProvider] | None = None) -> Survey:
    """Every instance: the ledger's, checked with their providers, and the ``providers``' own
    lists (default: :func:`listable_providers`). Rows whose instance is gone are shown ``gone``
    once and forgotten."""
    ledger = Ledger.default()
    entries, unreadable = ledger_rows(ledger)
    found, failures = _portal.call(gather, entries, _listing(providers))
    for f in found:
        if f.status == GONE:
            ledger.forget(f.instance_id)
    found = _portal.call(_paused.with_disk, found)  # a paused one says what it holds
    return Survey(tuple(found), (*unreadable, *failures))


def locate(instance_ids: Sequence[str]) -> tuple[list[Instance], list[str], list[str]]:
    """Each id as :func:`stop` finds it (the ledger, else the providers' lists): the instances
    found, the ids found nowhere, and the providers that failed to list.

    Raises:
        InvalidInstanceIdError (ValueError): an id is not an instance id.
    """
    for instance_id in instance_ids:
        check_instance_id(instance_id)
    return _lookup(instance_ids, None)


# ---- stop --------------------------------------------------------------------------------------


def stop(instance_ids: Sequence[str], *, providers: Sequence[ComputeProvider] | None = None) -> StopOutcome:
    """Shut these instances down, each found in the ledger or else in the ``providers``' own lists
    (asked only when an id is not in the ledger).

    Raises:
        InvalidInstanceIdError (ValueError): an id is not an instance id; nothing was done.
    """
    for instance_id in instance_ids:
        check_instance_id(instance_id)
    targets, unknown, failures = _lookup(instance_ids, providers)
    return _stop(targets, tuple(unknown), tuple(failures))


def find(instance_id: str, *, providers: Sequence[ComputeProvider] | None = None) -> Instance | None:
    """The instance, from the ledger or else the ``providers``' own lists; None when unknown.

    Raises:
        InvalidInstanceIdError (ValueError): ``instance_id`` is not an instance id.
    """
    check_instance_id(instance_id)
    found, _, _ = _lookup([instance_id], providers)
    return found[0] if found else None


def provider_of(instance_id: str, doing: str, op: str) -> ComputeProvider:
    """The provider that runs the instance, found as :func:`find` finds it (the ledger, else
    each provider's own list: an instance another home or host made).

    Raises:
        InvalidInstanceIdError (ValueError): ``instance_id`` is not an instance id.
        InstanceNotFoundError: it is nowhere (one sentence naming what was being ``doing``).
    """
    found = find(instance_id)
    if found is None or found.provider is None:
        why = found.reason if found is not None else "not in the ledger or in any provider's list"
        raise InstanceNotFoundError(f"no instance {instance_id!r} to {doing}: {why}", op=op)
    return found.provider


def stop_all(*, providers: Sequence[ComputeProvider] | None = None) -> StopOutcome:
    """Shut down every instance :func:`ps` shows (but the gone ones)."""
    survey = ps(providers=providers)
    return _stop([f for f in survey.instances if f.status != GONE], (), survey.problems)


def _stop(targets: Sequence[Instance], unknown: tuple[str, ...], problems: tuple[str, ...]) -> StopOutcome:
    errors = _portal.call(stop_each, targets)
    forgotten = _forget_abandoned(targets, errors)
    gone = {f.instance_id for f, _ in forgotten}
    failed = tuple((t, e) for t, e in zip(targets, errors, strict=True) if e and t.instance_id not in gone)
    stopped = tuple(t for t, e in zip(targets, errors, strict=True) if not e or t.instance_id in gone)
    return StopOutcome(stopped, forgotten, failed, unknown, problems)


def _lookup(
    instance_ids: Sequence[str], providers: Sequence[ComputeProvider] | None
) -> tuple[list[Instance], list[str], list[str]]:
    """Each id from the ledger, else from the providers' own lists (asked only when needed).

    Returns the instances found, the ids found nowhere, and the providers that failed to list.
    """
    wanted = list(dict.fromkeys(instance_ids))
    ledger = Ledger.default()
    by_id = {e.instance_id: recorded(e) for e in map(ledger.get, wanted) if e is not None}
    failures: list[str] = []
    if any(i not in by_id for i in wanted):
        listed, failures = _portal.call(gather, [], _listing(providers))
        by_id = {f.instance_id: f for f in listed} | by_id
    return [by_id[i] for i in wanted if i in by_id], [i for i in wanted if i not in by_id], failures


def _forget_abandoned(targets: Sequence[Instance], errors: Sequence[str]) -> tuple[tuple[Instance, str], ...]:
    """Forget the row of each target that could not be stopped, when its provision never
    finished (``LedgerEntry.abandoned``) and its provider cannot be reached: there is nothing
    to stop from here. Returns those targets, each with why."""
    ledger = Ledger.default()
    forgotten = []
    for target, error in zip(targets, errors, strict=True):
        entry = ledger.get(target.instance_id) if error and target.provider is not None else None
        if entry is None or not entry.abandoned():
            continue
        checked = _portal.call(check, entry)
        if checked.status in (GONE, UNREACHABLE):
            ledger.forget(target.instance_id)
            forgotten.append((target, abandoned_reason(entry, checked.reason or error)))
    return tuple(forgotten)


# ---- gc ----------------------------------------------------------------------------------------


def gc(
    *,
    dry_run: bool = False,
    providers: Sequence[ComputeProvider] | None = None,
    retain_s: float | None = None,
) -> GcOutcome:
    """Remove this home's orphans (see the module docstring) and the paused instances past their
    retain age (``retain_s``, else each one's own: ``_retain``); with ``dry_run``, change nothing
    and say what would go."""
    ledger = Ledger.default()
    entries, unreadable = ledger_rows(ledger)
    found, failures = _portal.call(gather, entries, _listing(providers))
    kept = _portal.call(_paused.retains, found, retain_s)
    orphans, unchecked = _plan(entries, found, home_tag(), time.time(), kept)
    problems = (*unreadable, *failures, *unchecked)
    if dry_run:
        return GcOutcome(tuple(orphans), (), problems, dry_run=True)
    orphans = [o for o in orphans if _still_orphan(o, ledger, kept)]
    return GcOutcome(tuple(orphans), _act(orphans, ledger), problems, dry_run=False)


def orphan_reason(entry: LedgerEntry, now: float) -> str | None:
    """Why a recorded instance that still exists is an orphan, or ``None`` to keep it: the home
    reaper's rule, plus a failed provision."""
    if entry.state == "failed":
        return "its provision failed"
    idle_s, age_s = max(0.0, now - entry.last_active), now - entry.created_at
    return _home_reaper.orphan_reason(entry, idle_s=idle_s, age_s=age_s)


def _plan(
    entries: Sequence[LedgerEntry],
    found: Sequence[Instance],
    home: str,
    now: float,
    kept: Mapping[str, float | None] | None = None,
) -> tuple[list[Orphan], list[str]]:
    """The orphans among ``found`` (the survey of ``entries`` and the providers' lists), and one
    line per recorded instance that could not be checked."""
    rows = {e.instance_id: e for e in entries}
    orphans: list[Orphan] = []
    failures: list[str] = []
    for f in found:
        entry = rows.get(f.instance_id)
        if entry is None:
            if f.home == home:
                orphans.append(Orphan("remove", f, "labelled with this home but not in its ledger", False))
        elif f.home and f.home != home:  # a row naming another home's instance: not ours to remove
            failures.append(f"left {f.instance_id} alone: {foreign_row(f.instance_id)}")
        elif f.status == GONE:
            orphans.append(Orphan("forget", f, "the instance no longer exists", True))
        elif f.status == UNREACHABLE and f.provider is not None and entry.abandoned():
            orphans.append(Orphan("forget", f, abandoned_reason(entry, f.reason), True))
        elif f.status == UNREACHABLE:
            failures.append(f"could not check {f.instance_id}: {f.reason}")
        elif f.status == _paused.PAUSED:  # idle by definition: its retain age decides
            if why := _paused.paused_reason(entry, now, (kept or {}).get(f.instance_id)):
                orphans.append(Orphan("remove", f, why, True))
        elif why := orphan_reason(entry, now):
            orphans.append(Orphan("remove", f, why, True))
    return orphans, failures


def foreign_row(instance_id: str) -> str:
    """Why a ledger row of this home is not acted on: its instance's label names another home."""
    forget = shlex.join(
        ["sqlite3", str(Ledger.default().path), f"DELETE FROM instances WHERE instance_id = '{instance_id}'"]
    )
    return (
        f"the instance belongs to another praisonai home (its label says so), though this home's "
        f"ledger has a row for it; remove the row: {forget}"
    )


def _still_orphan(orphan: Orphan, ledger: Ledger, kept: Mapping[str, float | None]) -> bool:
    """Whether the decision holds against the ledger as it is now."""
    row = ledger.get(orphan.instance.instance_id)
    if orphan.kind == "forget":
        return True  # forgetting is idempotent, and the instance was seen gone
    if not orphan.recorded:
        return row is None  # recorded meanwhile: a provision in flight
    if row is not None and orphan.instance.status == _paused.PAUSED:  # resumed meanwhile: a fresh stamp
        return _paused.paused_reason(row, time.time(), kept.get(row.instance_id)) is not None
    return row is not None and orphan_reason(row, time.time()) is not None


def _act(orphans: Sequence[Orphan], ledger: Ledger) -> tuple[tuple[Orphan, str], ...]:
    """Forget or remove each orphan (removal is the provider's ``shutdown``, which drops the row
    too); returns each removal that failed, with why."""
    for orphan in orphans:
        if orphan.kind == "forget":
            ledger.forget(orphan.instance.instance_id)
    removals = [o for o in orphans if o.kind == "remove"]
    errors = _portal.call(stop_each, [o.instance for o in removals])
    return tuple((o, error) for o, error in zip(removals, errors, strict=True) if error)


def _listing(providers: Sequence[ComputeProvider] | None) -> list[ComputeProvider]:
    return listable_providers() if providers is None else list(providers)
