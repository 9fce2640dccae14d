"""Terminals on E2B through the real ``e2b`` SDK's ``sandbox.pty`` against its wire fake
(``fakes.e2b``, whose pty process is a ``docker exec`` with a tty): what the conformance pty
suite (test_conformance.py: env, cwd, user, resize, exit codes, close) does not see. The SDK's
``pty.create`` always starts ``bash -i -l``, so the provider has that bash start the program
(``PROMPT_COMMAND``, see providers/e2b/_pty.py): the sandbox's env reaches it, the start line
leaves no trace, a resize is envd's Update, and a missing cwd ends the terminal rather than
leaving a shell in its place."""

from __future__ import annotations

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


def test_the_start_line_leaves_no_trace_and_the_sandboxes_env_reaches_it(fake: E2BFake) -> None:
    p = E2BCompute()
    iid = _portal.call(p.provision, {"env": {"FROM_CFG": "cfg"}}).instance_id

    async def check() -> None:
        line = 'echo "[$FROM_CFG ${PROMPT_COMMAND-unset}]"'
        async with await p.open_pty(iid, command=line) as pty:
            assert b"[cfg unset]" in await read_all(pty)
        async with await p.open_pty(iid) as pty:  # the login shell
            await pty.write(b'echo "[$FROM_CFG ${PROMPT_COMMAND-unset} $TERM $((40+2))]"\n')
            assert b"[cfg unset xterm 42]" in await read_until(pty, b"42]")

    try:
        _portal.call(check)
    finally:
        _portal.call(p.shutdown, iid)


def test_resize_goes_to_envd(fake: E2BFake) -> None:
    p = E2BCompute()
    iid = _portal.call(p.provision).instance_id

    async def check() -> None:
        async with await p.open_pty(iid, command=["/bin/sh"], cols=50, rows=10) as pty:
            updates = fake.calls.count("POST /process.Process/Update")
            await pty.resize(120, 33)
            assert fake.calls.count("POST /process.Process/Update") == updates + 1

    try:
        _portal.call(check)
    finally:
        _portal.call(p.shutdown, iid)


def test_a_missing_cwd_ends_the_terminal(fake: E2BFake) -> None:
    p = E2BCompute()
    iid = _portal.call(p.provision).instance_id

    async def check() -> None:
        async with await p.open_pty(iid, command="true", cwd="missing") as pty:
            await read_all(pty)
            with anyio.fail_after(_WAIT_S):
                assert await pty.wait() == 1  # not a shell waiting in its place

    try:
        _portal.call(check)
    finally:
        _portal.call(p.shutdown, iid)
