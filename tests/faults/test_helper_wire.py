"""The helper's stderr as a command can write it (issue 42, item 3), against real docker, a real
sshd and a local helper.

A command can write to the stderr the helper frames job ends on (``/proc/<helper pid>/fd/2``,
and on docker's main channel ``/proc/1/fd/2``, the container's own): there it may forge the line
that says the helper ended, leave a line unended so that the helper's next notice is glued to it,
or write one endless line. None of it may end, alter or stall another call, nor grow this process
without bound.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import anyio
import pytest
from kit import Instance, wait_until

from praisonai import _portal
from praisonai._types import ExecRequest, ExecResult
from praisonai.compute.channel import ChannelMixin
from praisonai.compute.providers.docker import DockerCompute, container_name
from praisonai.compute.providers.docker._attach import AttachTransport
from praisonai.compute.providers.local import LocalCompute
from praisonai.compute.watchdog import HELPER_ENDED
from praisonai.runtime.channel import Channel

# Every way a command might write the ended line: framed by newlines, bare, unended, with a
# guessed secret; into the stderr of every process it can open (but regular files: a teammate's
# spooled stderr is one, and commands of one instance share their files: not this test's matter).
_ENDED_LINES = "\\n{e}\\n{e}\\n{e} {guess}\\n{e}".format(e=HELPER_ENDED, guess="0" * 32)  # the last unended
_FORGE_ENDED = (
    'i=0; while [ "$i" -lt 10 ]; do i=$((i + 1)); '
    "for f in /proc/1/fd/2 /proc/[0-9]*/fd/2; do "
    '[ -f "$f" ] && continue; '
    f"printf '{_ENDED_LINES}' 2>/dev/null >\"$f\"; "
    "done; sleep 0.1; done; echo forged"
)
_FILE = bytes(range(256)) * 400  # binary, 100 KiB


@pytest.fixture(params=["runc", "runsc"])
def engine(
    request: pytest.FixtureRequest, docker_ok: None, skip_unless_required: Callable[[str, str | None], None]
) -> DockerCompute:
    """Docker under runc, and under gVisor where the engine has it (a /proc of gVisor's own)."""
    if request.param == "runc":
        return DockerCompute()
    runtimes = DockerCompute().api.info().get("Runtimes") or {}
    skip_unless_required("gvisor", None if "runsc" in runtimes else "the Docker engine has no runsc runtime")
    return DockerCompute(runtime="runsc")


async def _exec(
    provider: ChannelMixin, iid: str, command: str, timeout: float = 20, *, same_uid: bool = False
) -> ExecResult:
    """``command``'s result; ``same_uid``: as the helper's own user, as every command is where
    commands share it (ssh, local; docker with ``command_user="root"``), so that the wire itself is
    what is attacked, not only the uid that keeps a docker command from the helper's stderr."""
    if isinstance(provider, LocalCompute):  # local spawns its commands itself: use its helper
        return await provider._channel_exec(iid, ExecRequest(command, timeout=timeout))
    if isinstance(provider, DockerCompute):
        return await provider.execute(iid, command, timeout=timeout, privileged=same_uid)
    return await provider.execute(iid, command, timeout=timeout)


async def _main_channel(provider: DockerCompute, iid: str) -> Channel:
    channel = await provider._channels.get(iid)
    assert isinstance(channel.transport, AttachTransport), "the instance's first channel is its main one"
    return channel


@pytest.mark.timeout(60)
def test_a_forged_helper_ended_line_ends_no_call(
    engine: DockerCompute, make: Callable[..., Instance]
) -> None:
    """Execs and reads run beside a command that writes the ended line everywhere it can: each
    returns its own result, and the main channel stays the one open."""
    provider = engine
    _, iid = make(provider)

    async def scenario() -> None:
        channel = await _main_channel(provider, iid)
        await provider.write_file(iid, "/workspace/data.bin", _FILE)
        failures: list[str] = []
        forged = anyio.Event()

        async def calls(n: int) -> None:
            round_ = 0
            while round_ < 2 or not forged.is_set():  # for as long as the forger writes
                round_ += 1
                code = (n * 10 + round_) % 120
                result = await _exec(provider, iid, f"sleep 0.2; echo out-{n}-{round_}; exit {code}")
                if (result.exit_code, result.stdout, result.stderr) != (code, f"out-{n}-{round_}\n", ""):
                    failures.append(f"exec {n}/{round_}: {result}")
                if await provider.read_file(iid, "/workspace/data.bin") != _FILE:
                    failures.append(f"read_file {n}/{round_} changed")

        with anyio.fail_after(45):
            async with anyio.create_task_group() as tg:
                for n in range(4):
                    tg.start_soon(calls, n)
                forger = await _exec(provider, iid, _FORGE_ENDED, timeout=30, same_uid=True)
                forged.set()
        assert (forger.exit_code, forger.stdout) == (0, "forged\n"), forger
        assert not failures, failures
        assert await provider._channels.get(iid) is channel, "the main channel was ended"

    _portal.call(scenario)


def test_the_waiters_own_ended_line_still_ends_the_main_channel(
    engine: DockerCompute, make: Callable[..., Instance]
) -> None:
    """The helper killed from outside: its waiter's line (with the secret) ends the channel at
    once, with no request waiting to notice, and the next call gets a new channel."""
    provider = engine
    _, iid = make(provider)
    channel = _portal.call(_main_channel, provider, iid)
    subprocess.run(["docker", "exec", container_name(iid), "kill", "-9", str(channel.helper_pid)], check=True)
    wait_until(lambda: not channel.is_open, 10)
    assert _portal.call(_exec, provider, iid, "echo next").stdout == "next\n"


def test_an_unended_line_on_the_helpers_stderr_does_not_swallow_a_notice(helped: Instance) -> None:
    """Bytes without a newline on the helper's stderr, then a teammate's command ends: its end
    notice must not be glued to them (it was, and the call waited out its timeout)."""
    provider, iid = helped
    assert isinstance(provider, ChannelMixin)

    async def scenario() -> ExecResult:
        channel = await provider._channels.get(iid)
        stray = f"printf 'unended stray text' >/proc/{channel.helper_pid}/fd/2; sleep 1.5"
        result: list[ExecResult] = []

        async def teammate() -> None:
            await anyio.sleep(0.5)  # the stray text is out
            result.append(await _exec(provider, iid, "sleep 0.3; echo real; exit 4", timeout=8))

        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(teammate)
                assert (await _exec(provider, iid, stray, same_uid=True)).exit_code == 0
        return result[0]

    result = _portal.call(scenario)
    assert (result.exit_code, result.stdout, result.timed_out) == (4, "real\n", False), result


@pytest.mark.usefixtures("docker_ok")
@pytest.mark.timeout(50)
def test_a_300_mb_line_on_the_helpers_stderr_is_dropped_not_kept(make: Callable[..., Instance]) -> None:
    """One endless line (no newline in 300 MB) into the main helper's stderr, and a call ending
    behind it: the stream is read through at its pace (not re-joined per chunk, which never ended
    and grew this process by hundreds of MiB), and the calls before, beside and after it work.
    What the host holds meanwhile is measured in tests/unit/test_wire.py."""
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
                flooded = await _exec(provider, iid, flood, timeout=40, same_uid=True)
            after = await _exec(provider, iid, "echo after")
        assert await provider._channels.get(iid) is channel
        return flooded, beside[0], after

    flooded, beside, after = _portal.call(scenario)
    assert (flooded.exit_code, flooded.stdout) == (0, "flooded\n"), flooded
    assert (beside.exit_code, beside.stdout) == (3, "beside\n"), beside
    assert (after.exit_code, after.stdout) == (0, "after\n"), after
