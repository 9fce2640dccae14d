"""Shell sessions under faults, on real local processes, bubblewrap and docker: a signal between
commands, a killed shell with calls queued behind it, a cancelled waiting call, and the session
secret nowhere a command can read it. (Output that tries to forge the framing, concurrent calls
and rejected input are conformance checks: praisonai/compute/testing/exec.py.)"""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest
from kit import Instance, provider_named, provisioned

from praisonai import _portal
from praisonai._errors import ChannelClosedError
from praisonai._types import SessionResult
from praisonai.compute.providers.local import LocalCompute
from praisonai.runtime.session import ShellSession


@pytest.fixture(scope="module", params=["local", "local-bwrap", "docker"])
def instance(request: pytest.FixtureRequest) -> Iterator[Instance]:
    yield from provisioned(provider_named(request.param, request))


def in_session(instance: Instance, body: object) -> None:
    """Run ``await body(session)`` on a fresh session of the instance, closed afterwards."""
    provider, instance_id = instance

    async def main() -> None:
        session = await provider.open_session(instance_id)
        try:
            await body(session)  # type: ignore[operator]
        finally:
            await session.close()

    _portal.call(main)


def test_an_interrupt_between_commands_keeps_the_shell(instance: Instance) -> None:
    async def body(session: ShellSession) -> None:
        await session.run("export KEEP=kept")
        for _ in range(3):
            await session._signal("INT")  # as interrupt() does, racing a command that just ended
            await anyio.sleep(0.1)
        r = await session.run('echo "$KEEP"')
        assert (r.stdout, session.restarts) == ("kept\n", 0), r

    in_session(instance, body)


def test_a_killed_shell_fails_its_command_and_the_queue_goes_on_in_a_new_one(instance: Instance) -> None:
    async def body(session: ShellSession) -> None:
        await session.run("export KEEP=kept")
        failed: list[BaseException] = []
        later: dict[int, SessionResult] = {}

        async def first() -> None:
            try:
                await session.run("sleep 30", timeout=60)
            except ChannelClosedError as exc:
                failed.append(exc)

        async def queued(i: int) -> None:
            later[i] = await session.run(f'echo "q{i} ${{KEEP:-fresh}}"', timeout=60)

        async with anyio.create_task_group() as tg:
            tg.start_soon(first)
            await anyio.sleep(0.3)
            for i in range(3):
                tg.start_soon(queued, i)
            await anyio.sleep(0.3)
            await session._signal("KILL")  # the whole shell dies under its command
        assert failed and "may not have finished" in str(failed[0]), failed
        assert {i: r.stdout for i, r in later.items()} == {i: f"q{i} fresh\n" for i in range(3)}, later
        assert session.restarts == 1

    in_session(instance, body)


def test_a_cancelled_waiting_call_never_runs_and_the_queue_goes_on(instance: Instance) -> None:
    async def body(session: ShellSession) -> None:
        await session.run("rm -f cancelled-ran")
        results: list[SessionResult] = []

        async def run(command: str) -> None:
            results.append(await session.run(command, timeout=30))

        async with anyio.create_task_group() as tg:
            tg.start_soon(run, "sleep 0.5; echo first")
            await anyio.sleep(0.1)
            with anyio.CancelScope() as waiting:
                waiting.cancel()  # cancelled while it waits for its turn
                await session.run("touch cancelled-ran")
            tg.start_soon(run, "echo third")
        assert [r.stdout for r in results] == ["first\n", "third\n"], results
        assert (await session.run("ls cancelled-ran")).exit_code != 0, "a cancelled waiting call ran"

    in_session(instance, body)


def test_the_session_secret_is_nowhere_a_command_can_read(instance: Instance) -> None:
    async def body(session: ShellSession) -> None:
        await session.run("true")
        secret = session._secret
        assert len(secret) == 32
        dumps = [
            "set; env; export -p",
            "for p in /proc/[0-9]*; do cat $p/cmdline $p/environ; done 2>/dev/null",
            "cat /proc/$$/cmdline /proc/$$/environ",
            "grep -r . /tmp/.praisonai 2>/dev/null | head -c 1000000",
        ]
        for dump in dumps:
            r = await session.run(dump)
            assert secret not in r.stdout + r.stderr, dump

    in_session(instance, body)


def test_closing_a_session_ends_all_its_processes() -> None:
    provider = LocalCompute()
    info = _portal.call(provider.provision)

    async def body() -> str:
        session = await provider.open_session(info.instance_id)
        pgid = (await session.run("echo $$")).stdout.strip()
        await session.close()
        for _ in range(50):  # the shell and its writer end when stdin closes
            left = await provider.execute(info.instance_id, f"ps -o pid= -g {pgid} || true")
            if not left.stdout.strip():
                break
            await anyio.sleep(0.1)
        return str(left.stdout.strip())

    try:
        assert _portal.call(body) == ""
    finally:
        _portal.call(provider.shutdown, info.instance_id)


def test_input_that_arrives_after_its_command_ended_runs_as_nothing(instance: Instance) -> None:
    async def body(session: ShellSession) -> None:
        await session.run("rm -f stray-ran")
        assert session._transport is not None
        for late in (b"touch stray-ran\n", b"touch stray-ran; echo half-a-line"):
            # what send() writes when the command it meant ends first: the shell reads it itself
            await anyio.to_thread.run_sync(session._transport.send, late)
            r = await session.run("echo next; ls stray-ran 2>/dev/null || echo absent", timeout=30)
            assert (r.stdout, r.stderr, r.exit_code) == ("next\nabsent\n", "", 0), (late, r)

    in_session(instance, body)
