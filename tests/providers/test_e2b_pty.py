"""Terminals on E2B through the real ``e2b`` SDK's ``sandbox.pty`` against its wire fake
(``fakes.e2b``, whose pty process is a ``docker exec`` with a tty): what the conformance pty
suite does not see. The SDK's ``pty.create`` always starts ``bash -i -l``, so the provider has
that bash start the program (``PROMPT_COMMAND``, see providers/e2b/_pty.py): the program gets
the sandbox's, the bound and the call's env (the call's winning), the working directory, a real
resize (envd's Update), its own exit code, and no shell is left in its place when it cannot
run."""

from __future__ import annotations

import time

import anyio
import pytest

pytest.importorskip("e2b")

from fakes.e2b import E2BFake

from praisonai import _portal
from praisonai.compute.providers.e2b import E2BCompute
from praisonai.compute.testing.pty import read_all, read_until

pytestmark = pytest.mark.usefixtures("docker_ok")

PROVIDER = "e2b"  # the fake fixture: tests/providers/conftest.py
_WAIT_S = 60


def test_terminal_runs_with_the_instances_env_and_workdir(fake: E2BFake) -> None:
    p = E2BCompute()
    iid = _portal.call(p.provision, {"env": {"FROM_CFG": "cfg"}}).instance_id

    async def check() -> None:
        await p.bind_env(iid, {"BOUND": "bound", "BOTH": "bound"})
        await p.execute(iid, "mkdir -p sub")
        line = 'echo "[$FROM_CFG $BOUND $BOTH $(pwd) ${PROMPT_COMMAND-unset}]"; exit 5'
        async with await p.open_pty(iid, command=line, cwd="sub", env={"BOTH": "call"}) as pty:
            out = await read_all(pty)
            assert b"[cfg bound call /workspace/sub unset]" in out, out
            assert await pty.wait() == 5

    try:
        _portal.call(check)
    finally:
        _portal.call(p.shutdown, iid)


def test_the_default_terminal_is_a_login_shell_in_the_workdir(fake: E2BFake) -> None:
    p = E2BCompute()
    iid = _portal.call(p.provision).instance_id

    async def check() -> None:
        async with await p.open_pty(iid) as pty:
            await pty.write(b'echo "[$(pwd) ${PROMPT_COMMAND-unset} $TERM $((40+2))]"\n')
            assert b"[/workspace unset xterm 42]" in await read_until(pty, b"42]")
            await pty.write(b"exit 4\n")
            with anyio.fail_after(_WAIT_S):
                assert await pty.wait() == 4

    try:
        _portal.call(check)
    finally:
        _portal.call(p.shutdown, iid)


def test_resize_goes_to_envd_and_the_program_sees_it(fake: E2BFake) -> None:
    p = E2BCompute()
    iid = _portal.call(p.provision).instance_id

    async def check() -> None:
        # The program traps SIGWINCH: the new size must reach it as a signal, not only stty.
        script = "trap 'echo winch-$(stty size)' WINCH; echo ready; while :; do sleep 0.1; done"
        async with await p.open_pty(iid, command=["/bin/bash", "-c", script], cols=50, rows=10) as pty:
            await read_until(pty, b"ready")
            updates = fake.calls.count("POST /process.Process/Update")
            await pty.resize(120, 33)
            assert b"winch-33 120" in await read_until(pty, b"winch-33 120")
            assert fake.calls.count("POST /process.Process/Update") == updates + 1

    try:
        _portal.call(check)
    finally:
        _portal.call(p.shutdown, iid)


def test_a_program_that_cannot_run_ends_the_terminal(fake: E2BFake) -> None:
    p = E2BCompute()
    iid = _portal.call(p.provision).instance_id

    async def check() -> None:
        async with await p.open_pty(iid, command=["/no/such/program"]) as pty:
            await read_all(pty)
            assert await pty.wait() == 127  # not a shell waiting in its place
        async with await p.open_pty(iid, command="true", cwd="missing") as pty:
            await read_all(pty)
            assert await pty.wait() == 1

    try:
        _portal.call(check)
    finally:
        _portal.call(p.shutdown, iid)


def test_env_values_stay_off_command_lines(fake: E2BFake) -> None:
    p = E2BCompute()
    iid = _portal.call(p.provision).instance_id
    secret = "s3cr3t-value-91"

    async def check() -> None:
        async with await p.open_pty(iid, command=["/bin/sh"], env={"TOKEN": secret}) as pty:
            await pty.write(b'echo "got-${#TOKEN}"\n')
            await read_until(pty, b"got-15")
            listed = await p.execute(iid, "ps -eo args")
            assert secret not in listed.stdout

    try:
        _portal.call(check)
    finally:
        _portal.call(p.shutdown, iid)


def test_a_terminal_nobody_reads_closes_promptly(fake: E2BFake) -> None:
    p = E2BCompute()
    iid = _portal.call(p.provision).instance_id

    async def check() -> None:
        pty = await p.open_pty(iid, command=["yes", "praisonai-unread"])
        await pty.read()
        await anyio.sleep(2)  # the client's buffer fills; the stream, then the program, wait
        started = time.monotonic()
        await pty.close()
        assert time.monotonic() - started < 4, "close waited on the full buffer"
        assert await pty.wait() == 137
        left = await p.execute(iid, "ps -eo args | grep '^yes praisonai-unread' || true")
        assert left.stdout == ""

    try:
        _portal.call(check)
    finally:
        _portal.call(p.shutdown, iid)
