"""Conformance checks for snapshots (``Capability.SNAPSHOT``): a snapshot keeps the files as they
were when it was taken while the instance runs on; new instances start from it, each independent
of the others and of the source; ``restore`` rolls back under the same id or refuses in one
sentence naming ``fork(1)``; no env value bound to the source is in one; bad input (an unknown
snapshot, another provider's, a fork of 0 or past ``FORK_MAX``) is refused and makes nothing.
Every check removes the instances and snapshots it made, instances first (an image an instance
runs from cannot go before it).

Listed in :data:`praisonai.compute.testing.SUITES`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager

import anyio

from praisonai._errors import ConfigError, UnsupportedFeatureError
from praisonai._ledger import Ledger
from praisonai._limits import FORK_MAX
from praisonai._types import Capability, InstanceInfo
from praisonai.compute import snapshots
from praisonai.compute.abilities.snapshots import SnapshotInfo
from praisonai.compute.config import ComputeConfig
from praisonai.compute.testing._kit import Context, Suite

suite = Suite()
SNAPSHOT = Capability.SNAPSHOT


class Made:
    """What a check made: removed when it ends, pass or fail."""

    def __init__(self) -> None:
        self.instances: list[str] = []
        self.snapshots: list[SnapshotInfo] = []

    def took(self, snapshot: SnapshotInfo, instances: Sequence[InstanceInfo] = ()) -> SnapshotInfo:
        self.snapshots.append(snapshot)
        self.instances.extend(info.instance_id for info in instances)
        return snapshot


@asynccontextmanager
async def _made(ctx: Context) -> AsyncIterator[Made]:
    made = Made()
    try:
        yield made
    finally:
        with anyio.CancelScope(shield=True):
            for instance_id in made.instances:
                await ctx.provider.shutdown(instance_id)
            for snapshot in made.snapshots:
                await snapshots.remove(snapshot)


async def _own(ctx: Context, made: Made) -> str:
    info = await ctx.provider.provision({})
    made.instances.append(info.instance_id)
    return info.instance_id


@suite.check(SNAPSHOT)
async def a_snapshot_keeps_its_files_and_new_instances_start_from_it(ctx: Context) -> None:
    p, iid = ctx.provider, ctx.instance_id
    async with _made(ctx) as made:
        await p.write_file(iid, "snap/kept.txt", "before")
        snapshot = made.took(await snapshots.front(p).take(iid, None))
        await p.write_file(iid, "snap/kept.txt", "after")
        assert snapshot.provider == p.name and snapshot.source == iid, snapshot
        assert snapshot.id in [s.id for s in snapshots.list_snapshots()], "a snapshot must be listed"
        new = await snapshots.provision_from(p, ComputeConfig(), snapshot)
        made.instances.append(new.instance_id)
        assert new.instance_id != iid
        assert await p.read_file(new.instance_id, "snap/kept.txt") == b"before", "the snapshot's files"
        assert await p.read_file(iid, "snap/kept.txt") == b"after", "the source must run on as it was"


@suite.check(SNAPSHOT)
async def fork_makes_independent_instances(ctx: Context) -> None:
    p, iid = ctx.provider, ctx.instance_id
    async with _made(ctx) as made:
        await p.write_file(iid, "fork/base.txt", "base")
        snapshot, forks = await snapshots.fork(p, iid, 2, ComputeConfig())
        made.took(snapshot, forks)
        assert len({info.instance_id for info in forks} | {iid}) == 3, forks
        for info in forks:
            await p.write_file(info.instance_id, "fork/mine.txt", info.instance_id)
        for info in forks:
            assert await p.read_file(info.instance_id, "fork/base.txt") == b"base"
            mine = await p.read_file(info.instance_id, "fork/mine.txt")
            assert mine == info.instance_id.encode(), f"forks must not share files: {mine!r}"
        source = await p.execute(iid, "cat fork/mine.txt 2>/dev/null || echo none")
        assert source.stdout.strip() == "none", f"a fork's write reached the source: {source}"


@suite.check(SNAPSHOT)
async def restore_rolls_back_under_the_same_id_or_says_fork(ctx: Context) -> None:
    p = ctx.provider
    async with _made(ctx) as made:
        iid = await _own(ctx, made)
        await p.write_file(iid, "state.txt", "one")
        snapshot = made.took(await snapshots.front(p).take(iid, None))
        await p.write_file(iid, "state.txt", "two")
        await p.write_file(iid, "later.txt", "made after the snapshot")
        try:
            info = await snapshots.front(p).restore(iid, snapshot)
        except UnsupportedFeatureError as exc:
            assert "fork(1)" in str(exc) and "\n" not in str(exc), exc
            assert await p.read_file(iid, "state.txt") == b"two", "a refused restore must change nothing"
            return
        assert info.instance_id == iid
        assert await p.read_file(iid, "state.txt") == b"one", "restore must bring the snapshot's files back"
        gone = await p.execute(iid, "cat later.txt 2>/dev/null || echo gone")
        assert gone.stdout.strip() == "gone", f"a file made after the snapshot survived the restore: {gone}"


@suite.check(SNAPSHOT, Capability.PROCESSES)
async def no_bound_env_value_is_in_a_snapshot(ctx: Context) -> None:
    p = ctx.provider
    secret = "bound-after-start-" + "9f3c" * 4
    async with _made(ctx) as made:
        iid = await _own(ctx, made)
        await p.processes.bind_env(iid, {"LATE_SECRET": secret})
        assert (await p.execute(iid, 'echo "$LATE_SECRET"')).stdout.strip() == secret
        snapshot = made.took(await snapshots.front(p).take(iid, None))
        new = await snapshots.provision_from(p, ComputeConfig(), snapshot)
        made.instances.append(new.instance_id)
        seen = await p.execute(new.instance_id, f'echo "[$LATE_SECRET]"; grep -rlsF {secret} . || true')
        assert seen.stdout.strip() == "[]", f"the snapshot carried a bound env value: {seen.stdout!r}"
        assert (await p.execute(iid, 'echo "$LATE_SECRET"')).stdout.strip() == secret, "the source lost it"


@suite.check(SNAPSHOT)
async def bad_snapshot_input_is_refused_and_makes_nothing(ctx: Context) -> None:
    p, iid = ctx.provider, ctx.instance_id
    async with _made(ctx) as made:
        snapshot = made.took(await snapshots.front(p).take(iid, None))
        before = (_recorded(), snapshots.list_snapshots())
        refusals: dict[str, Callable[[], object]] = {
            "an unknown snapshot": lambda: snapshots.find("snap_000000000000", p.name),
            "an unknown name": lambda: snapshots.find("no-such-snapshot", p.name),
            "another provider's": lambda: snapshots.find(snapshot, "another-provider"),
        }
        for what, call in refusals.items():
            try:
                call()
            except ConfigError as exc:
                assert "\n" not in str(exc), exc
                continue
            raise AssertionError(f"{what} was not refused")
        for n in (0, -1, FORK_MAX + 1, 10_000):
            try:
                await snapshots.fork(p, iid, n, ComputeConfig())
            except ConfigError as exc:
                assert str(FORK_MAX) in str(exc), exc
                continue
            raise AssertionError(f"fork({n}) was not refused")
        after = (_recorded(), snapshots.list_snapshots())
        assert after == before, "a refused call made something"


def _recorded() -> set[str]:
    """The home's instances, as its ledger has them (an engine's list holds other homes' too)."""
    return {entry.instance_id for entry in Ledger.default().entries()}
