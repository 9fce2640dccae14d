"""Terminals on Modal through the real ``modal`` SDK's ``sb.exec(pty=True)`` against its wire fake
(``fakes.modal``, whose pty exec is a ``docker exec`` with a tty): what the conformance pty suite
(test_conformance.py: env, cwd, user, a resize made inside the sandbox as Modal has no resize
call, exit codes, close) does not see: the sandbox's env reaches the program, and the start
wrapper's own variable does not."""

from __future__ import annotations

import pytest

pytest.importorskip("modal")

from served import IMAGE, Served

from praisonai import _portal
from praisonai.compute.providers.modal import ModalCompute
from praisonai.compute.testing.pty import read_all

pytestmark = pytest.mark.usefixtures("docker_ok")

PROVIDER = "modal"  # the fake fixture: tests/providers/conftest.py


def _provisioned(served: Served, config: dict[str, object] | None = None) -> tuple[ModalCompute, str]:
    p = ModalCompute(image=IMAGE)
    return p, _portal.call(p.provision, config or {}).instance_id


def test_terminal_runs_with_the_sandboxes_env_and_nothing_of_the_start(served: Served) -> None:
    p, iid = _provisioned(served, {"env": {"FROM_CFG": "cfg"}})

    async def check() -> None:
        line = 'echo "[$FROM_CFG $TERM ${PRAISONAI_PTY_KEEP-unset}]"; exit 5'
        async with await p.open_pty(iid, command=line, env={"BOTH": "call"}) as pty:
            out = await read_all(pty)
            assert b"[cfg xterm unset]" in out, out
            assert await pty.wait() == 5

    try:
        _portal.call(check)
    finally:
        _portal.call(p.shutdown, iid)
