"""The helper's stderr as a command can write it (issue 42, item 3), against real docker, a real
sshd and a local helper.

A command can write to the stderr the helper frames job ends on (``/proc/<helper pid>/fd/2``):
there it may leave a line unended so that the helper's next notice is glued to it, or write one
endless line. Neither may alter or stall another call, nor grow this process without bound.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import anyio
import pytest
from kit import Instance, provisioned

from praisonai import _portal
from praisonai._types import ExecRequest, ExecResult
from praisonai.compute.channel import ChannelMixin
from praisonai.compute.providers.docker import DockerCompute
from praisonai.compute.providers.docker._attach import AttachTransport
from praisonai.compute.providers.local import LocalCompute
from praisonai.runtime.channel import Channel


@pytest.fixture(scope="module")
def local_channel_instance() -> Iterator[Instance]:
    yield from provisioned(LocalCompute())


@pytest.fixture(params=["docker", "ssh", "local_channel"])
def helped(request: pytest.FixtureRequest) -> Instance:
    """An instance whose exec calls go through the helper (local: its channel, driven directly)."""
    instance: Instance = request.getfixturevalue(f"{request.param}_instance")
    return instance


async def _exec(provider: ChannelMixin, iid: str, command: str, timeout: float = 20) -> ExecResult:
    if isinstance(provider, LocalCompute):  # local spawns its commands itself: use its helper
        return await provider._channel_exec(iid, ExecRequest(command, timeout=timeout))
    return await provider.execute(iid, command, timeout=timeout)


async def _main_channel(provider: DockerCompute, iid: str) -> Channel:
    channel = await provider._channels.get(iid)
    assert isinstance(channel.transport, AttachTransport), "the instance's first channel is its main one"
    return channel


def test_an_unended_line_on_the_helpers_stderr_does_not_swallow_a_notice(helped: Instance) -> None:
    """Bytes without a newline on the helper's stderr, then a teammate's command ends: its end
    notice must not be glued to them (it was, and the call waited out its timeout)."""
    provider, iid = helped
    assert isinstance(provider, ChannelMixin)

    async def scenario() -> ExecResult:
        channel = await provider._channels.get(iid)
        stray = f"printf 'unended stray text' >/proc/{channel.helper_pid}/fd/2; sleep 2"
        result: list[ExecResult] = []

        async def teammate() -> None:
            await anyio.sleep(0.5)  # the stray text is out
            result.append(await _exec(provider, iid, "sleep 0.3; echo real; exit 4", timeout=8))

        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(teammate)
                assert (await _exec(provider, iid, stray)).exit_code == 0
        return result[0]

    result = _portal.call(scenario)
    assert (result.exit_code, result.stdout, result.timed_out) == (4, "real\n", False), result


@pytest.mark.usefixtures("docker_ok")
@pytest.mark.timeout(50)
def test_a_300_mb_line_on_the_helpers_stderr_is_dropped_not_kept(make: Callable[..., Instance]) -> None:
    """One endless line (no newline in 300 MB) into the main helper's stderr, and a call ending
    behind it: the stream is read through at its pace (not re-joined per chunk, which never ended
    and grew this process by hundreds of MiB), and the calls before, beside and after it work."""
    provider = DockerCompute()
    _, iid = make(provider)

    async def scenario() -> tuple[ExecResult, ExecResult, ExecResult]:
        channel = await _main_channel(provider, iid)
        flood = f"head -c 300000000 /dev/zero | tr '\\0' a >/proc/{channel.helper_pid}/fd/2 && echo flooded"
        beside: list[ExecResult] = []

        async def teammate() -> None:
            await anyio.sleep(0.5)
            beside.append(await _exec(provider, iid, "echo beside; exit 3", timeout=40))

        with anyio.fail_after(45):
            async with anyio.create_task_group() as tg:
                tg.start_soon(teammate)
                flooded = await _exec(provider, iid, flood, timeout=40)
            after = await _exec(provider, iid, "echo after")
        assert await provider._channels.get(iid) is channel
        return flooded, beside[0], after

    flooded, beside, after = _portal.call(scenario)
    assert (flooded.exit_code, flooded.stdout) == (0, "flooded\n"), flooded
    assert (beside.exit_code, beside.stdout) == (3, "beside\n"), beside
    assert (after.exit_code, after.stdout) == (0, "after\n"), after
