"""``praisonai compute …``: the providers, and the instances they hold (``ps``, ``stop``, ``gc``).

``ps``, ``stop`` and ``gc`` reconcile two sources: the ledger (every instance this home created,
each checked with its own rebuilt provider) and the own list of every provider that needs no
arguments and is usable now (instances the ledger missed, from other homes or older versions).
``gc`` removes orphans of this home only (see ``_gc``).
"""

from __future__ import annotations

import dataclasses
import inspect
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated

import anyio
import typer

from praisonai import _portal
from praisonai._errors import InstanceNotFoundError
from praisonai._ledger import Ledger, LedgerEntry, home_tag
from praisonai._types import InstanceInfo, InstanceStatus
from praisonai.cli import _output
from praisonai.compute.base import ComputeProvider, check_instance_id, is_instance_id
from praisonai.compute.lifecycle import LABEL_HOME, LABEL_OWNER
from praisonai.compute.registry import (
    available_providers,
    provider_class,
    provider_for_record,
    provider_statuses,
)

app = typer.Typer(help="Compute providers and their instances.", no_args_is_help=True)

#: How long one provider call may take before its instance is shown as unreachable.
CALL_TIMEOUT_S = 30.0
GONE = "gone"
UNREACHABLE = "unreachable"


@dataclass(frozen=True, slots=True)
class Found:
    """One instance as ``ps`` shows it, with the provider object that reaches it (``None`` when
    that provider could not be built; ``reason`` says why, as it does for ``unreachable``).
    ``home`` is the home label of an instance found in a provider's list (not for ledger rows)."""

    instance_id: str
    provider_name: str
    status: str
    created_at: float
    owner: str
    endpoint: str
    provider: ComputeProvider | None
    reason: str = ""
    home: str = ""


@app.command("providers")
def providers(json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """List providers: installed, available now, and why not."""
    rows = [(s.name, s.installed, s.available, s.reason) for s in provider_statuses()]
    _output.table(("name", "installed", "available", "why not"), rows, as_json=json)


@app.command("ps")
def ps(json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """List instances: the ledger's, checked with their providers, and every provider's own list.

    Exits 1 when a provider could not list its instances or a ledger row could not be read
    (each named on stderr; the other rows are still shown).
    """
    found, failures = survey()
    columns, rows = _ps_table(found, as_json=json)
    _output.table(columns, rows, as_json=json)
    _report(failures)
    if failures:
        raise typer.Exit(1)


@app.command("stop")
def stop(
    instance_ids: Annotated[
        list[str] | None,
        typer.Argument(help="Instances to stop.", metavar="[INSTANCE_ID]...", show_default=False),
    ] = None,
    all_: Annotated[bool, typer.Option("--all", help="Stop every instance `ps` shows.")] = False,
) -> None:
    """Shut down instances, found in the ledger or in a provider's own list; print a tally.

    An instance whose provision never finished and whose provider does not answer has nothing
    left to stop here: its ledger row is forgotten, and said so.

    Exits 1 when an instance is unknown or could not be stopped, or a provider could not list;
    2, before anything is done, when an argument is not an instance id.
    """
    if bool(instance_ids) == all_:
        raise typer.BadParameter(
            "name the instances to stop, or give --all (not both)", param_hint="INSTANCE_ID"
        )
    for instance_id in instance_ids or []:
        check_instance_id(instance_id)
    unknown: list[str] = []
    if all_:
        found, listing_failures = survey()
        targets = [f for f in found if f.status != GONE]
    else:
        targets, unknown, listing_failures = _lookup(instance_ids or [])
    _report(listing_failures)
    errors = _forget_abandoned(targets, _portal.call(_stop_each, targets))
    for target, error in zip(targets, errors, strict=True):
        if error:
            _output.error(f"could not stop {target.instance_id}: {error}")
    for instance_id in unknown:
        _output.error(f"no instance {instance_id!r} in the ledger or in any provider's list")
    failed = len(unknown) + sum(1 for e in errors if e)
    typer.echo(f"{len(targets) + len(unknown) - failed} stopped, {failed} failed")
    if failed or listing_failures:
        raise typer.Exit(1)


@app.command("gc")
def gc(
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print what would go; change nothing.")] = False,
) -> None:
    """Remove this home's orphans: instances whose creator is gone and that sat idle past their
    idle timeout (or ttl), instances labelled with this home but missing from its ledger, and
    ledger rows whose instance is gone. Prints each; exits 1 when anything failed."""
    from praisonai.cli import _gc  # it builds on this module

    ledger = Ledger.default()
    entries, unreadable = ledger_rows(ledger)
    found, failures = _portal.call(_gather, entries, listable_providers())
    orphans, unchecked = _gc.plan(entries, found, home_tag(), time.time())
    problems = unreadable + failures + unchecked
    _report(problems)
    errors: dict[str, str] = {}
    if not dry_run:
        orphans = [o for o in orphans if _gc.still_orphan(o, ledger)]
        errors = _gc.act(orphans, ledger)
    if _gc.report(orphans, errors, problems=len(problems), dry_run=dry_run):
        raise typer.Exit(1)


# ---- finding instances --------------------------------------------------------------------


def survey() -> tuple[list[Found], list[str]]:
    """Every instance ``ps`` shows, oldest first, and one line per provider that failed to list.

    Ledger rows whose instance no longer exists are shown as ``gone`` and forgotten.
    """
    ledger = Ledger.default()
    entries, unreadable = ledger_rows(ledger)
    found, failures = _portal.call(_gather, entries, listable_providers())
    for f in found:
        if f.status == GONE:
            ledger.forget(f.instance_id)
    return found, unreadable + failures


def ledger_rows(ledger: Ledger) -> tuple[list[LedgerEntry], list[str]]:
    """The ledger's usable rows, and one sentence per row skipped: unreadable, or not holding an
    instance id of its provider (no provider is ever called with such an id)."""

    def flaw(entry: LedgerEntry) -> str | None:
        ok = is_instance_id(entry.instance_id, entry.provider)
        return None if ok else f"it is not an instance id of the {entry.provider} provider"

    return ledger.scan(flaw)


def listable_providers() -> list[ComputeProvider]:
    """Providers built with no arguments and usable now; the others are skipped silently
    (their instances still show through the ledger)."""
    usable = []
    for name in available_providers():
        try:
            cls = provider_class(name)
            inspect.signature(cls).bind()  # TypeError: it needs arguments (a host, a token…)
        except (ImportError, TypeError):  # ImportError covers MissingDependencyError
            continue
        provider = cls()
        if provider.unavailable_reason() is None:
            usable.append(provider)
    return usable


def _lookup(instance_ids: Sequence[str]) -> tuple[list[Found], list[str], list[str]]:
    """Each id from the ledger, else from the providers' own lists (asked only when needed).

    Returns the instances found, the ids found nowhere, and the providers that failed to list.
    """
    wanted = list(dict.fromkeys(instance_ids))
    ledger = Ledger.default()
    by_id = {e.instance_id: _ledger_found(e) for e in map(ledger.get, wanted) if e is not None}
    failures: list[str] = []
    if any(i not in by_id for i in wanted):
        listed, failures = _portal.call(_gather, [], listable_providers())
        by_id = {f.instance_id: f for f in listed} | by_id
    return [by_id[i] for i in wanted if i in by_id], [i for i in wanted if i not in by_id], failures


async def _gather(
    entries: Sequence[LedgerEntry], providers: Sequence[ComputeProvider]
) -> tuple[list[Found], list[str]]:
    """Check every ledger entry and list every provider, all at once; the ledger's row wins."""
    checked: list[Found] = []
    listed: list[Found] = []
    failures: list[str] = []

    async def check(entry: LedgerEntry) -> None:
        checked.append(await _check(entry))

    async def listing(provider: ComputeProvider) -> None:
        try:
            with anyio.fail_after(CALL_TIMEOUT_S):
                infos = await provider.list_instances()
        except Exception as exc:
            failures.append(f"could not list {provider.name} instances: {_one_line(exc)}")
            return
        listed.extend(_listed_found(info, provider) for info in infos)

    async with anyio.create_task_group() as tg:
        for entry in entries:
            tg.start_soon(check, entry)
        for provider in providers:
            tg.start_soon(listing, provider)
    rows = {f.instance_id: f for f in listed} | {f.instance_id: f for f in checked}
    return sorted(rows.values(), key=lambda f: (f.created_at, f.instance_id)), sorted(failures)


async def _check(entry: LedgerEntry) -> Found:
    """The entry as it stands: its provider's status, ``gone``, or ``unreachable`` and why."""
    found = _ledger_found(entry)
    if found.provider is None:
        return found
    try:
        with anyio.fail_after(CALL_TIMEOUT_S):
            info = await found.provider.get_status(entry.instance_id)
    except InstanceNotFoundError:
        # Recorded before creation: while its creator lives, "not there" means "not there yet".
        creating = entry.state == "provisioning" and entry.owner_alive() is not False
        return dataclasses.replace(found, status="provisioning" if creating else GONE)
    except Exception as exc:  # any other failure: shown, and the row kept for a later look
        return dataclasses.replace(found, status=UNREACHABLE, reason=_one_line(exc))
    # The provider says running, the ledger says setup has not finished (or failed): that is news.
    unfinished = entry.state in ("provisioning", "failed") and info.status is InstanceStatus.RUNNING
    status = entry.state if unfinished else info.status.value
    return dataclasses.replace(found, status=status, endpoint=info.endpoint)


def _ledger_found(entry: LedgerEntry) -> Found:
    """A ledger row with its rebuilt provider (status still the ledger's own)."""
    try:
        provider: ComputeProvider | None = provider_for_record(entry.provider, entry.spec)
        reason = ""
    except Exception as exc:  # unknown or uninstalled provider, or a spec it no longer takes
        provider, reason = None, _one_line(exc)
    status = UNREACHABLE if provider is None else entry.state
    return Found(
        entry.instance_id, entry.provider, status, entry.created_at, entry.owner, "", provider, reason
    )


def _listed_found(info: InstanceInfo, provider: ComputeProvider) -> Found:
    owner, home = info.labels.get(LABEL_OWNER, ""), info.labels.get(LABEL_HOME, "")
    return Found(
        info.instance_id, provider.name, info.status.value, info.created_at, owner, info.endpoint, provider,
        home=home,
    )  # fmt: skip


# ---- stopping -----------------------------------------------------------------------------


def _forget_abandoned(targets: Sequence[Found], errors: list[str]) -> list[str]:
    """Forget the row of each target that could not be stopped, when its provision never
    finished (``LedgerEntry.abandoned``) and its provider cannot be reached: there is nothing
    to stop from here. Returns ``errors`` with those cleared."""
    ledger = Ledger.default()
    cleared = list(errors)
    for index, (target, error) in enumerate(zip(targets, errors, strict=True)):
        entry = ledger.get(target.instance_id) if error and target.provider is not None else None
        if entry is None or not entry.abandoned():
            continue
        checked = _portal.call(_check, entry)
        if checked.status in (GONE, UNREACHABLE):
            ledger.forget(target.instance_id)
            _output.note(f"forgot {target.instance_id}: {abandoned_reason(entry, checked.reason or error)}")
            cleared[index] = ""
    return cleared


def abandoned_reason(entry: LedgerEntry, unreachable: str) -> str:
    """Why the row of an abandoned provision whose provider cannot be reached is forgotten."""
    how = (
        "its provision failed" if entry.state == "failed" else f"its creator {entry.owner} died mid-provision"
    )
    return (
        f"{how} and its provider cannot be reached ({unreachable}); anything it made carries this "
        "home's label, which `praisonai compute gc` finds once the provider answers"
    )


async def _stop_each(targets: Sequence[Found]) -> list[str]:
    """Shut every target down at once; for each, ``""`` or why it failed."""
    errors = [""] * len(targets)

    async def stop_one(index: int, target: Found) -> None:
        if target.provider is None:
            errors[index] = target.reason or "its provider cannot be built here"
            return
        try:
            with anyio.fail_after(CALL_TIMEOUT_S):
                await target.provider.shutdown(target.instance_id)
        except Exception as exc:
            errors[index] = _one_line(exc)

    async with anyio.create_task_group() as tg:
        for index, target in enumerate(targets):
            tg.start_soon(stop_one, index, target)
    return errors


# ---- output -------------------------------------------------------------------------------


def _ps_table(found: Sequence[Found], *, as_json: bool) -> tuple[tuple[str, ...], list[tuple[object, ...]]]:
    """JSON keeps the reason and creation time apart; the table folds the reason into status."""
    now = time.time()
    if as_json:  # ages in seconds (null when unknown)
        columns = ("instance", "provider", "status", "age_s", "created_at", "owner", "endpoint", "reason")
        return columns, [
            (f.instance_id, f.provider_name, f.status, _age_s(f.created_at, now), f.created_at, f.owner,
             f.endpoint, f.reason)
            for f in found
        ]  # fmt: skip
    return ("instance", "provider", "status", "age", "owner", "endpoint"), [
        (f.instance_id, f.provider_name, f"{f.status}: {f.reason}" if f.reason else f.status,
         _age(f.created_at, now), f.owner, f.endpoint)
        for f in found
    ]  # fmt: skip


def _report(failures: Sequence[str]) -> None:
    for line in failures:
        _output.error(line)


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError) and not str(exc):
        return f"no answer within {CALL_TIMEOUT_S:g}s"
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _age_s(created_at: float, now: float) -> float | None:
    return round(max(0.0, now - created_at), 3) if created_at > 0 else None


def _age(created_at: float, now: float) -> str:
    """``12s``, ``4m``, ``2h05m``, ``3d04h``; ``?`` when the creation time is unknown."""
    if created_at <= 0:
        return "?"
    s = max(0, int(now - created_at))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"
