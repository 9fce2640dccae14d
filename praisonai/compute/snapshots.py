"""The home's snapshots (``compute.abilities.snapshots``): recorded in the ledger's ``snapshots``
table, listed and removed from any process, found by id or name, and started from.

A row holds the snapshot's :class:`SnapshotInfo` and the spec that rebuilds the provider holding it
(``registry.provider_for_record``, as an instance's row does), never a secret. ``fork`` and
``Sandbox.create(from_snapshot=...)`` come here through :func:`provision_from`, the one path that
starts an instance from a snapshot: the ledger row, the reaper's adoption and the removal on
failure are ``lifecycle.provision``'s. :func:`prune_snapshots` removes the expired ones (``praisonai
compute gc``): made longer ago than an age, or beyond a count of the newest, as captures are pruned.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
import anyio.to_thread

from praisonai import _portal
from praisonai._errors import ConfigError, UnsupportedFeatureError
from praisonai._ledger import Ledger
from praisonai._limits import DEFAULT_SNAPSHOT_PRUNE_DAYS, FORK_MAX, MAX_NAME_BYTES
from praisonai._types import InstanceInfo
from praisonai.compute import lifecycle
from praisonai.compute.abilities.snapshots import SnapshotFront, SnapshotInfo
from praisonai.compute.base import ComputeProvider
from praisonai.compute.config import ComputeConfig
from praisonai.compute.requests import check_instance_id

__all__ = [
    "SNAPSHOT_ID",
    "SnapshotGc",
    "SnapshotInfo",
    "check_fork_count",
    "check_name",
    "expired",
    "find",
    "fork",
    "front",
    "list_snapshots",
    "provider_of",
    "provision_from",
    "prune_snapshots",
    "remove",
    "remove_snapshot",
]

SNAPSHOT_ID = re.compile(r"snap_[0-9a-f]{12}")
#: A name a user gives: shown in lists and typed back, so printable and without spaces.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_COLUMNS = "id, name, provider, spec, source, created_at, size_bytes"


def front(provider: ComputeProvider) -> SnapshotFront:
    """The snapshot calls of ``provider``, from its name, id check and snapshotter part."""
    check_id = functools.partial(check_instance_id, provider=provider.name)
    return SnapshotFront(provider.name, check_id, provider.snapshotter, provider.options.to_record(), _record)


def check_name(name: object) -> str | None:
    """``name`` when it is one a snapshot may take and none has; one sentence otherwise."""
    if name is None:
        return None
    if not isinstance(name, str) or not _NAME.fullmatch(name) or len(name) > MAX_NAME_BYTES:
        raise ConfigError(
            f"{name!r} is not a snapshot name: use letters, digits, '.', '_' and '-', starting "
            "with a letter or digit",
            op="snapshot",
        )
    if SNAPSHOT_ID.fullmatch(name) or _rows("SELECT 1 FROM snapshots WHERE name = ?", name):
        raise ConfigError(
            f"a snapshot named {name!r} exists already (or the name is a snapshot id); remove it "
            "(praisonai.compute.remove_snapshot) or choose another name",
            op="snapshot",
        )
    return name


def find(ref: SnapshotInfo | str, provider: str | None = None, op: str = "snapshot") -> SnapshotInfo:
    """The home's snapshot ``ref`` (a :class:`SnapshotInfo`, an id or a name), which must be
    ``provider``'s when given; one sentence otherwise."""
    key = ref.id if isinstance(ref, SnapshotInfo) else ref
    if not isinstance(key, str):
        raise ConfigError(f"a snapshot is a SnapshotInfo, an id or a name, not {type(ref).__name__}", op=op)
    rows = _rows(f"SELECT {_COLUMNS} FROM snapshots WHERE id = ? OR name = ?", key, key)
    if not rows:
        raise ConfigError(
            f"no snapshot {key!r} in this home; `praisonai compute snapshots` (or "
            "praisonai.compute.list_snapshots()) lists them",
            op=op,
        )
    found = _info(rows[0])
    if provider is not None:
        check_provider(found, provider, op, shown=key)
    return found


def check_provider(snapshot: SnapshotInfo, provider: str, op: str, *, shown: str | None = None) -> None:
    """One sentence unless ``snapshot`` (named ``shown``, else by its id) is ``provider``'s: only
    its own provider starts from it."""
    if snapshot.provider != provider:
        raise ConfigError(
            f"snapshot {shown or snapshot.id!r} is a {snapshot.provider} snapshot; only the "
            f"{snapshot.provider} provider starts from it, not {provider}",
            op=op,
        )


def list_snapshots() -> list[SnapshotInfo]:
    """Every snapshot of this home, by any process, oldest first."""
    return [_info(row) for row in _rows(f"SELECT {_COLUMNS} FROM snapshots ORDER BY created_at")]


def remove_snapshot(ref: SnapshotInfo | str) -> bool:
    """Remove the snapshot (a :class:`SnapshotInfo`, an id or a name) from its provider and the
    ledger; ``False`` when its provider held nothing any more (the row goes anyway). Blocking:
    async code awaits :func:`remove`.

    Raises:
        ConfigError: no such snapshot, or an instance still starts from it (docker: shut down the
            instances made from it first).
    """
    return bool(_portal.call(remove, ref))


async def remove(ref: SnapshotInfo | str) -> bool:
    """:func:`remove_snapshot`, awaited."""
    found = await anyio.to_thread.run_sync(functools.partial(find, ref, op="remove_snapshot"))
    return await _remove(found, await anyio.to_thread.run_sync(provider_of, found))


def provider_of(snapshot: SnapshotInfo) -> ComputeProvider:
    """The provider that holds ``snapshot``, rebuilt from its row (a local one under bubblewrap
    is one again)."""
    from praisonai.compute.registry import provider_for_record

    spec = json.loads(_rows("SELECT spec FROM snapshots WHERE id = ?", snapshot.id)[0][0])
    return provider_for_record(snapshot.provider, spec)


async def _remove(found: SnapshotInfo, provider: ComputeProvider) -> bool:
    snapshotter = front(provider).part("snapshots", "remove_snapshot")
    removed = await snapshotter.remove(found.id)
    await anyio.to_thread.run_sync(_rows, "DELETE FROM snapshots WHERE id = ?", found.id)
    return removed


async def provision_from(
    provider: ComputeProvider, cfg: ComputeConfig, snapshot: SnapshotInfo
) -> InstanceInfo:
    """A new instance of ``provider`` whose files are ``snapshot``'s (one of its own: ``find``
    checked) and whose config is ``cfg``'s; then ``cfg.refresh`` runs in it, as after a capture."""
    provider.check_supported(cfg)
    snapshotter = front(provider).part("starting instances from snapshots", "provision")

    async def make(instance_id: str, cfg: ComputeConfig, labels: dict[str, str]) -> InstanceInfo:
        info = await snapshotter.create_from(instance_id, cfg, labels, snapshot.id)
        await lifecycle.run_steps(provider, instance_id, cfg.refresh, cfg)
        return info

    return await lifecycle.provision(provider, cfg, make=make)


def check_fork_count(n: object) -> int:
    """``n`` when ``fork`` may make that many instances; one sentence otherwise."""
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= FORK_MAX:
        raise ConfigError(f"fork makes 1 to {FORK_MAX} instances, not {n!r}", op="fork")
    return n


async def fork(
    provider: ComputeProvider, instance_id: str, n: int, cfg: ComputeConfig
) -> tuple[SnapshotInfo, list[InstanceInfo]]:
    """Snapshot the instance, then make ``n`` instances of ``cfg`` from it, concurrently; the
    source keeps running. When any fails, every instance made and the snapshot are removed and the
    first failure is raised."""
    check_fork_count(n)
    snapshot = await front(provider).take(instance_id, None)
    made: list[InstanceInfo] = []
    failures: list[BaseException] = []

    async def one() -> None:
        try:
            made.append(await provision_from(provider, cfg, snapshot))
        except Exception as exc:  # its own instance is gone (lifecycle.provision); the others stay
            failures.append(exc)

    try:
        async with anyio.create_task_group() as tasks:
            for _ in range(n):
                tasks.start_soon(one)
        if failures:
            raise failures[0]
    except BaseException:
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as tasks:
                for info in made:
                    tasks.start_soon(provider.shutdown, info.instance_id)
            await _remove(snapshot, provider)
        raise
    return snapshot, made


async def _record(info: SnapshotInfo, spec: Mapping[str, Any]) -> None:
    """Add the snapshot's row; one sentence when another process took its name since ``check_name``
    (``OR IGNORE``: the ledger turns every sqlite error into an unusable home)."""
    row = (info.id, info.name, info.provider, json.dumps(dict(spec), sort_keys=True), info.source)
    sql = f"INSERT OR IGNORE INTO snapshots ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id"
    if not await anyio.to_thread.run_sync(lambda: _rows(sql, *row, info.created_at, info.size_bytes)):
        raise ConfigError(
            f"a snapshot named {info.name!r} exists already; choose another name", op="snapshot"
        )


@dataclasses.dataclass(frozen=True, slots=True)
class SnapshotGc:
    """What :func:`prune_snapshots` did (with ``dry_run``, would do) to the expired snapshots:
    ``removed`` (or would be), ``kept`` (an instance still starts from it: its provider's
    sentence) and ``failed`` (each with why)."""

    removed: tuple[SnapshotInfo, ...]
    kept: tuple[tuple[SnapshotInfo, str], ...]
    failed: tuple[tuple[SnapshotInfo, str], ...]
    dry_run: bool

    def as_json(self) -> list[dict[str, Any]]:
        """One object per expired snapshot, as ``compute gc --json`` prints it under ``snapshots``:
        its ``outcome`` (``removed``, ``would remove``, ``kept`` or ``failed``) and ``reason``."""
        gone = "would remove" if self.dry_run else "removed"
        rows: list[tuple[SnapshotInfo, str, str | None]] = [(s, gone, None) for s in self.removed]
        rows += [(s, "kept", why) for s, why in self.kept] + [(s, "failed", why) for s, why in self.failed]
        return [
            {"snapshot": s.id, "name": s.name, "provider": s.provider, "created_at": s.created_at}
            | {"outcome": outcome, "reason": why}
            for s, outcome, why in rows
        ]


def expired(
    found: Sequence[SnapshotInfo], *, older_than_s: float | None, keep: int | None, now: float
) -> list[SnapshotInfo]:
    """The snapshots of ``found`` made more than ``older_than_s`` seconds before ``now``, and all
    but the ``keep`` newest (``None``: not that rule), newest first."""
    newest_first = sorted(found, key=lambda s: s.created_at, reverse=True)
    return [
        s
        for index, s in enumerate(newest_first)
        if (older_than_s is not None and now - s.created_at > older_than_s)
        or (keep is not None and index >= keep)
    ]


def prune_snapshots(
    *, older_than_s: float | None = None, keep: int | None = None, dry_run: bool = False
) -> SnapshotGc:
    """Remove the home's snapshots made more than ``older_than_s`` seconds ago and all but the
    ``keep`` newest; neither given: those older than ``DEFAULT_SNAPSHOT_PRUNE_DAYS``. One an
    instance still starts from is kept (docker refuses to remove an image a container uses);
    ``dry_run`` changes nothing. Blocking (``praisonai compute gc`` runs it).

    Raises:
        ConfigError: ``older_than_s`` is not a number of seconds >= 0, or ``keep`` not a count.
    """
    if older_than_s is None and keep is None:
        older_than_s = DEFAULT_SNAPSHOT_PRUNE_DAYS * 86400
    _check_prune(older_than_s, keep)
    doomed = expired(list_snapshots(), older_than_s=older_than_s, keep=keep, now=time.time())
    if dry_run:
        return SnapshotGc(tuple(doomed), (), (), dry_run=True)
    return _portal.call(_prune, doomed)


async def _prune(doomed: Sequence[SnapshotInfo]) -> SnapshotGc:
    removed: list[SnapshotInfo] = []
    kept: list[tuple[SnapshotInfo, str]] = []
    failed: list[tuple[SnapshotInfo, str]] = []
    for snapshot in doomed:
        try:
            await _remove(snapshot, await anyio.to_thread.run_sync(provider_of, snapshot))
        except UnsupportedFeatureError as exc:
            failed.append((snapshot, str(exc)))
        except ConfigError as exc:  # the protocol's refusal: an instance still starts from it
            kept.append((snapshot, str(exc)))
        except Exception as exc:  # one sentence per snapshot; the others still go
            failed.append((snapshot, str(exc)))
        else:
            removed.append(snapshot)
    return SnapshotGc(tuple(removed), tuple(kept), tuple(failed), dry_run=False)


def _check_prune(older_than_s: object, keep: object) -> None:
    if older_than_s is not None and (
        isinstance(older_than_s, bool)
        or not isinstance(older_than_s, int | float)
        or not (math.isfinite(older_than_s) and older_than_s >= 0)
    ):
        raise ConfigError(f"a snapshot's age must be a number of seconds >= 0, not {older_than_s!r}", op="gc")
    if keep is not None and (isinstance(keep, bool) or not isinstance(keep, int) or keep < 0):
        raise ConfigError(f"the snapshots to keep must be a whole number >= 0, not {keep!r}", op="gc")


def _rows(sql: str, *params: object) -> list[tuple[Any, ...]]:
    return Ledger.default().execute(sql, params)


def _info(row: tuple[Any, ...]) -> SnapshotInfo:
    snapshot_id, name, provider, _spec, source, created_at, size = row
    return SnapshotInfo(snapshot_id, name, provider, source, float(created_at), size)
