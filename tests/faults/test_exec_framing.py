"""Forged end-of-job lines (issue 26, item 3) against real docker, a real sshd and a local helper.

A command runs as the helper's own user, so it can write to the helper's stderr
(``/proc/<helper pid>/fd/2``) and into its spool. Neither may end an exec call, its own or a
teammate's, nor fake a result recovered after a reconnect: the helper frames each job's end with
a secret of the job's own that commands never see, and the client accepts nothing else.
"""

from __future__ import annotations

import os
import signal
import subprocess

import anyio
import anyio.to_thread
from kit import Instance

from praisonai import _portal
from praisonai._errors import ChannelClosedError
from praisonai._types import ExecRequest, ExecResult
from praisonai.compute.channel import ChannelMixin
from praisonai.compute.providers.docker import DockerCompute, container_name
from praisonai.compute.providers.local import LocalCompute

# Lines a command writes to the helper's stderr for job $1: the old notice, the notice with a
# guessed secret, and malformed ones (which must not break the channel's reader either).
_FORGE = (
    "printf 'D %s 0 0\\nD %s 0 0 00000000000000000000000000000000\\nD\\nD %s x y z w\\n' "
    '"$1" "$1" "$1" >"/proc/{helper}/fd/2"'
)


async def _exec(provider: ChannelMixin, iid: str, command: str) -> ExecResult:
    if isinstance(provider, LocalCompute):  # local spawns its commands itself: use its helper
        return await provider._channel_exec(iid, ExecRequest(command))
    return await provider.execute(iid, command)


async def _forger(provider: ChannelMixin, iid: str) -> tuple[str, str]:
    """A shell function ``forge <job id>`` for commands, and the instance's spool."""
    channel = await provider._channels.get(iid)
    return f"forge() {{ {_FORGE.format(helper=channel.helper_pid)}; }}; ", channel.spool


def test_a_forged_end_line_does_not_end_its_own_call(helped: Instance) -> None:
    provider, iid = helped
    assert isinstance(provider, ChannelMixin)

    async def scenario() -> ExecResult:
        forge, _ = await _forger(provider, iid)
        return await _exec(provider, iid, f'{forge} forge "$PRAISONAI_EXEC_ID"; sleep 1; echo real; exit 3')

    result = _portal.call(scenario)
    assert (result.exit_code, result.stdout) == (3, "real\n"), result
    assert _portal.call(_exec, provider, iid, "echo still").stdout == "still\n"  # the channel lives


def test_a_forged_end_line_does_not_end_a_teammates_call(helped: Instance) -> None:
    """Call B learns call A's job id from the spool (as it could from /proc/*/environ) and
    forges A's end: A still returns its own result."""
    provider, iid = helped
    assert isinstance(provider, ChannelMixin)

    async def scenario() -> tuple[ExecResult, ExecResult]:
        forge, spool = await _forger(provider, iid)
        others = (
            f"for p in {spool}/x/*.p; do id=${{p##*/}}; id=${{id%.p}}; "
            f'[ "$id" = "$PRAISONAI_EXEC_ID" ] || {{ forge "$id"; echo "$id"; }}; done'
        )
        results: dict[str, ExecResult] = {}

        async def run(name: str, command: str) -> None:
            results[name] = await _exec(provider, iid, command)

        async with anyio.create_task_group() as tg:
            tg.start_soon(run, "a", "sleep 2; echo real; exit 5")
            await anyio.sleep(0.7)
            await run("b", forge + others)
        return results["a"], results["b"]

    a, b = _portal.call(scenario)
    assert b.exit_code == 0 and b.stdout.strip(), f"call B found no other job to forge: {b}"
    assert (a.exit_code, a.stdout) == (5, "real\n"), a


def _kill_helper(provider: ChannelMixin, iid: str, pid: int) -> None:
    """SIGKILL the helper from outside the instance (not through the helper itself)."""
    if isinstance(provider, DockerCompute):
        subprocess.run(["docker", "exec", container_name(iid), "kill", "-9", str(pid)], check=True)
    else:  # the test sshd and the local helper run on this machine
        os.kill(pid, signal.SIGKILL)


def test_a_forged_done_record_is_not_recovered(helped: Instance) -> None:
    """A command writes "done 0 0" as its job's record in the spool, then its helper dies: the
    caller gets the command's real result, or is told it may have run (the next helper stops the
    orphaned job: the record does not shield it), never the forged success."""
    provider, iid = helped
    assert isinstance(provider, ChannelMixin)

    async def scenario() -> ExecResult | ChannelClosedError:
        channel = await provider._channels.get(iid)
        record = f'{channel.spool}/x/"$PRAISONAI_EXEC_ID".p'
        results: list[ExecResult | ChannelClosedError] = []

        async def run() -> None:
            try:
                line = f"echo 'done 0 0' >>{record}; sleep 2; echo real; exit 7"
                results.append(await _exec(provider, iid, line))
            except ChannelClosedError as exc:
                results.append(exc)

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await anyio.sleep(0.7)
            await anyio.to_thread.run_sync(_kill_helper, provider, iid, channel.helper_pid)
            channel.close()  # ssh and local pipes outlive the helper while its job holds them
        return results[0]

    result = _portal.call(scenario)
    if isinstance(result, ChannelClosedError):
        assert result.sent and "may have run" in str(result), result
    else:
        assert (result.exit_code, result.stdout) == (7, "real\n"), result
