"""Terminals on Modal through the real ``modal`` SDK's ``sb.exec(pty=True)`` against its wire fake
(``fakes.modal``, whose pty exec is a ``docker exec`` with a tty): what the conformance pty suite
does not see. The program gets the sandbox's, the bound and the call's env (the call's winning)
and the working dir; Modal has no resize call, so a resize is made inside the sandbox and must
still reach the program as SIGWINCH; a program that cannot run ends the terminal; env values
stay off command lines; close kills the program once and leaves nothing running."""

from __future__ import annotations

import anyio
import pytest

pytest.importorskip("modal")

from served import IMAGE, Served

from praisonai import _portal
from praisonai.compute.providers.modal import ModalCompute
from praisonai.compute.testing.pty import read_all, read_until

pytestmark = pytest.mark.usefixtures("docker_ok")

PROVIDER = "modal"  # the fake fixture: tests/providers/conftest.py
_WAIT_S = 60


def _provisioned(served: Served, config: dict[str, object] | None = None) -> tuple[ModalCompute, str]:
    p = ModalCompute(image=IMAGE)
    return p, _portal.call(p.provision, config or {}).instance_id


def test_terminal_runs_with_the_instances_env_and_workdir(served: Served) -> None:
    p, iid = _provisioned(served, {"env": {"FROM_CFG": "cfg"}})

    async def check() -> None:
        await p.bind_env(iid, {"BOUND": "bound", "BOTH": "bound"})
        await p.execute(iid, "mkdir -p sub")
        line = 'echo "[$FROM_CFG $BOUND $BOTH $(pwd) $TERM ${PRAISONAI_PTY_KEEP-unset}]"; exit 5'
        async with await p.open_pty(iid, command=line, cwd="sub", env={"BOTH": "call"}) as pty:
            out = await read_all(pty)
            assert b"[cfg bound call /workspace/sub xterm unset]" in out, out
            assert await pty.wait() == 5

    try:
        _portal.call(check)
    finally:
        _portal.call(p.shutdown, iid)


def test_the_default_terminal_is_an_interactive_shell(served: Served) -> None:
    p, iid = _provisioned(served)

    async def check() -> None:
        async with await p.open_pty(iid) as pty:
            await pty.write(b'echo "[$(pwd) $((40+2))]"\n')
            assert b"[/workspace 42]" in await read_until(pty, b"42]")
            await pty.write(b"exit 4\n")
            with anyio.fail_after(_WAIT_S):
                assert await pty.wait() == 4

    try:
        _portal.call(check)
    finally:
        _portal.call(p.shutdown, iid)


def test_a_resize_reaches_the_program_as_sigwinch(served: Served) -> None:
    p, iid = _provisioned(served)

    async def check() -> None:
        script = "trap 'echo winch-$(stty size)' WINCH; echo ready; while :; do sleep 0.1; done"
        async with await p.open_pty(iid, command=["/bin/bash", "-c", script], cols=50, rows=10) as pty:
            await read_until(pty, b"ready")
            await pty.resize(120, 33)
            assert b"winch-33 120" in await read_until(pty, b"winch-33 120")

    try:
        _portal.call(check)
    finally:
        _portal.call(p.shutdown, iid)


def test_a_program_that_cannot_run_ends_the_terminal(served: Served) -> None:
    p, iid = _provisioned(served)

    async def check() -> None:
        async with await p.open_pty(iid, command=["/no/such/program"]) as pty:
            await read_all(pty)
            assert await pty.wait() == 127  # not a shell waiting in its place

    try:
        _portal.call(check)
    finally:
        _portal.call(p.shutdown, iid)


def test_env_values_stay_off_command_lines(served: Served) -> None:
    p, iid = _provisioned(served)
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


def test_close_kills_once_and_leaves_nothing_running(served: Served) -> None:
    p, iid = _provisioned(served)

    async def check() -> None:
        pty = await p.open_pty(iid, command=["yes", "praisonai-unread"])
        await pty.read()
        await anyio.sleep(1)  # the reader's buffer fills: the stream, then the program, wait
        await pty.close()
        await pty.close()  # at most once: a second close does nothing
        with anyio.fail_after(_WAIT_S):
            assert await pty.wait() == 137
        left = await p.execute(iid, "ps -eo args | grep '^yes praisonai-unread' || true")
        assert left.stdout == ""

    try:
        _portal.call(check)
    finally:
        _portal.call(p.shutdown, iid)
