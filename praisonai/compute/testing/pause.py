"""Conformance checks for pause and resume (``Capability.PAUSE``): an instance paused keeps its
files (its processes end, or are kept where the vendor snapshots memory: E2B, Tenki), says
``paused`` meanwhile (its status and the listing), and comes back under the same id; both
steps are idempotent, a paused instance's next call resumes it, and neither finds an instance
that does not exist. Each check provisions an instance of its own (``idle_action='pause'``,
which a provider made to remove a stopped instance needs) and removes it.

Listed in :data:`praisonai.compute.testing.SUITES`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from praisonai._errors import InstanceNotFoundError
from praisonai._types import Capability, InstanceStatus
from praisonai.compute.lifecycle import new_instance_id
from praisonai.compute.testing._kit import Context, Suite

suite = Suite()


@asynccontextmanager
async def _paused_instance(ctx: Context) -> AsyncIterator[str]:
    info = await ctx.provider.provision({"idle_action": "pause"})
    try:
        yield info.instance_id
    finally:
        await ctx.provider.shutdown(info.instance_id)


@suite.check(Capability.PAUSE)
async def pause_keeps_files(ctx: Context) -> None:
    p = ctx.provider
    async with _paused_instance(ctx) as iid:
        await p.write_file(iid, "kept.txt", "written before the pause")
        paused = await p.pause(iid)
        assert paused.status is InstanceStatus.PAUSED, f"pause must return it paused: {paused}"
        status = await p.get_status(iid)
        assert status.status is InstanceStatus.PAUSED, f"a paused instance must say so: {status}"
        listed = {i.instance_id: i.status for i in await p.list_instances()}
        assert listed.get(iid) is InstanceStatus.PAUSED, f"the listing must show it paused: {listed.get(iid)}"
        resumed = await p.resume(iid)
        assert resumed.instance_id == iid and resumed.status is InstanceStatus.RUNNING, resumed
        assert await p.read_file(iid, "kept.txt") == b"written before the pause", "files must survive"


@suite.check(Capability.PAUSE)
async def pause_and_resume_are_idempotent(ctx: Context) -> None:
    p = ctx.provider
    async with _paused_instance(ctx) as iid:
        assert (await p.resume(iid)).status is InstanceStatus.RUNNING, "resume of a running one keeps it"
        for _ in range(2):
            assert (await p.pause(iid)).status is InstanceStatus.PAUSED
        for _ in range(2):
            assert (await p.resume(iid)).status is InstanceStatus.RUNNING
        r = await p.execute(iid, "echo up")
        assert r.ok and r.stdout == "up\n", r


@suite.check(Capability.PAUSE)
async def a_call_resumes_a_paused_instance(ctx: Context) -> None:
    p = ctx.provider
    async with _paused_instance(ctx) as iid:
        await p.write_file(iid, "kept.txt", "kept")
        await p.pause(iid)
        r = await p.execute(iid, "cat kept.txt")
        assert r.ok and r.stdout == "kept", f"the next call must resume the paused instance: {r}"
        assert (await p.get_status(iid)).status is InstanceStatus.RUNNING


@suite.check(Capability.PAUSE)
async def pause_and_resume_of_an_unknown_instance_are_not_found(ctx: Context) -> None:
    unknown = new_instance_id(ctx.provider.name)  # the form of this provider's ids, never made
    for step in (ctx.provider.pause, ctx.provider.resume):
        try:
            await step(unknown)
        except InstanceNotFoundError:
            continue
        raise AssertionError(f"{step.__name__} of an instance never made must be InstanceNotFoundError")
