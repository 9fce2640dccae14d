"""Reconciling the ledger with the providers' own lists: the engine under :mod:`.inventory`.

Two sources: the ledger (every instance this home created, each checked with its provider rebuilt
by ``registry.provider_for_record``) and the own list of every provider that needs no arguments
and is usable now (instances the ledger missed, from other homes or older versions). Every
provider call is bounded by :data:`CALL_TIMEOUT_S`; a failure is a row's ``reason``, never an
exception.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import anyio

from praisonai._errors import InstanceNotFoundError
from praisonai._ledger import Ledger, LedgerEntry
from praisonai._lifetime import Lifetime
from praisonai._types import InstanceInfo, InstanceStatus
from praisonai.compute.base import ComputeProvider
from praisonai.compute.lifecycle import LABEL_DEFINITION, LABEL_HOME, LABEL_OWNER
from praisonai.compute.registry import available_providers, provider_class, provider_for_record
from praisonai.compute.requests import is_instance_id

#: How long one provider call may take before its instance is shown as unreachable.
CALL_TIMEOUT_S = 30.0
#: A recorded instance its provider no longer has (its row is then forgotten).
GONE = "gone"
#: A recorded instance whose provider could not be built or did not answer (``reason`` says why).
UNREACHABLE = "unreachable"


@dataclass(frozen=True, slots=True)
class Instance:
    """One instance as ``ps`` shows it.

    ``status``: the provider's (``running``, ``stopped``…), the ledger's when setup has not
    finished (``provisioning``, ``failed``) or the instance waits in a warm pool (``warm``), or
    :data:`GONE` / :data:`UNREACHABLE`.
    ``provider``: the provider object that reaches it (``None`` when it could not be built;
    ``reason`` then says why, as it does for ``unreachable``). ``home``: the instance's home
    label, where its provider keeps one (``lifecycle.LABEL_HOME``). ``created_at`` and
    ``last_active`` are 0 when unknown; ``lifetime`` is known for this home's ledger rows only;
    ``definition`` is the value-free hash of its environment, from the instance's label.
    """

    instance_id: str
    provider_name: str
    status: str
    created_at: float
    owner: str
    endpoint: str
    provider: ComputeProvider | None
    reason: str = ""
    home: str = ""
    last_active: float = 0.0
    lifetime: Lifetime | None = None
    definition: str = ""

    def idle_s(self, now: float) -> float | None:
        """Seconds since its last activity, ``None`` when unknown."""
        return _since(self.last_active, now)

    def ttl_left_s(self, now: float) -> float | None:
        """Seconds until its ttl stops it, ``None`` when it has none or it is unknown."""
        if self.lifetime is None or self.lifetime.ttl_s is None or self.created_at <= 0:
            return None
        return round(max(0.0, self.created_at + self.lifetime.ttl_s - now), 3)

    def as_json(self, now: float) -> dict[str, Any]:
        """The row ``compute ps --json`` prints and the dashboard shows: durations in seconds
        (``null`` when unknown), times as ``*_at``, the provider's name and how it contains."""
        return {
            "instance": self.instance_id,
            "provider": self.provider_name,
            "flavour": str(getattr(self.provider, "flavour", "")),
            "status": self.status,
            "definition": self.definition,
            "age_s": _since(self.created_at, now),
            "idle_s": self.idle_s(now),
            "ttl_left_s": self.ttl_left_s(now),
            "created_at": self.created_at,
            "owner": self.owner,
            "home": self.home,
            "endpoint": self.endpoint,
            "reason": self.reason,
        }


def _since(moment: float, now: float) -> float | None:
    return round(max(0.0, now - moment), 3) if moment > 0 else None


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


async def gather(
    entries: Sequence[LedgerEntry], providers: Sequence[ComputeProvider]
) -> tuple[list[Instance], list[str]]:
    """Check every ledger entry and list every provider, all at once; the ledger's row wins.
    Returns the instances oldest first, and one sentence per provider that could not list."""
    checked: list[Instance] = []
    listed: list[Instance] = []
    failures: list[str] = []

    async def check_one(entry: LedgerEntry) -> None:
        checked.append(await check(entry))

    async def listing(provider: ComputeProvider) -> None:
        try:
            with anyio.fail_after(CALL_TIMEOUT_S):
                infos = await provider.list_instances()
        except Exception as exc:
            failures.append(f"could not list {provider.name} instances: {one_line(exc)}")
            return
        listed.extend(_listed(info, provider) for info in infos)

    async with anyio.create_task_group() as tg:
        for entry in entries:
            tg.start_soon(check_one, entry)
        for provider in providers:
            tg.start_soon(listing, provider)
    rows = {f.instance_id: f for f in listed} | {f.instance_id: f for f in checked}
    return sorted(rows.values(), key=lambda f: (f.created_at, f.instance_id)), sorted(failures)


async def check(entry: LedgerEntry) -> Instance:
    """The entry as it stands: its provider's status, ``gone``, or ``unreachable`` and why."""
    found = recorded(entry)
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
        return dataclasses.replace(found, status=UNREACHABLE, reason=one_line(exc))
    # The provider says running, the ledger says setup has not finished (or failed), or that the
    # instance waits in a warm pool for a claim: the ledger's word is the news.
    unfinished = entry.state in ("provisioning", "failed", "warm") and info.status is InstanceStatus.RUNNING
    status = entry.state if unfinished else info.status.value
    definition, home = info.labels.get(LABEL_DEFINITION, ""), info.labels.get(LABEL_HOME, "")
    return dataclasses.replace(found, status=status, endpoint=info.endpoint, definition=definition, home=home)


def recorded(entry: LedgerEntry) -> Instance:
    """A ledger row with its rebuilt provider (status still the ledger's own)."""
    try:
        provider: ComputeProvider | None = provider_for_record(entry.provider, entry.spec)
        reason = ""
    except Exception as exc:  # unknown or uninstalled provider, or a spec it no longer takes
        provider, reason = None, one_line(exc)
    status = UNREACHABLE if provider is None else entry.state
    return Instance(
        entry.instance_id,
        entry.provider,
        status,
        entry.created_at,
        entry.owner,
        "",
        provider,
        reason,
        last_active=entry.last_active,
        lifetime=entry.lifetime,
    )


def _listed(info: InstanceInfo, provider: ComputeProvider) -> Instance:
    owner, home = info.labels.get(LABEL_OWNER, ""), info.labels.get(LABEL_HOME, "")
    return Instance(
        info.instance_id,
        provider.name,
        info.status.value,
        info.created_at,
        owner,
        info.endpoint,
        provider,
        home=home,
        definition=info.labels.get(LABEL_DEFINITION, ""),
    )


async def stop_each(targets: Sequence[Instance]) -> list[str]:
    """Shut every target down at once; for each, ``""`` or why it failed."""
    errors = [""] * len(targets)

    async def stop_one(index: int, target: Instance) -> None:
        if target.provider is None:
            errors[index] = target.reason or "its provider cannot be built here"
            return
        try:
            with anyio.fail_after(CALL_TIMEOUT_S):
                await target.provider.shutdown(target.instance_id)
        except Exception as exc:
            errors[index] = one_line(exc)

    async with anyio.create_task_group() as tg:
        for index, target in enumerate(targets):
            tg.start_soon(stop_one, index, target)
    return errors


def abandoned_reason(entry: LedgerEntry, unreachable: str) -> str:
    """Why the row of an abandoned provision whose provider cannot be reached is forgotten."""
    how = (
        "its provision failed" if entry.state == "failed" else f"its creator {entry.owner} died mid-provision"
    )
    return (
        f"{how} and its provider cannot be reached ({unreachable}); anything it made carries this "
        "home's label, which `praisonai compute gc` finds once the provider answers"
    )


def one_line(exc: BaseException) -> str:
    """An exception as one line for a row's reason (a bare timeout says how long it waited)."""
    if isinstance(exc, TimeoutError) and not str(exc):
        return f"no answer within {CALL_TIMEOUT_S:g}s"
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
