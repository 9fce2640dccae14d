"""Terminals on Daytona through the real ``daytona`` SDK against its wire fake (``fakes.daytona``:
the daemon's PTY WebSocket on a docker exec with a tty). The conformance suite (output, size,
env, cwd, the shell without a command, exit codes, close) runs in test_conformance.py; these are
Daytona's own traps: the daemon starts a login shell and takes no command, so a command is
launched through it unseen."""

from __future__ import annotations

import pytest

pytest.importorskip("daytona", reason="the daytona SDK is not installed (pip install 'praisonai[daytona]')")

from fakes.daytona import DaytonaFake

from praisonai import _portal
from praisonai._errors import ConfigError, PathNotFoundError, PraisonAIError
from praisonai.compute.providers.daytona import DaytonaCompute
from praisonai.compute.testing.pty import read_all

pytestmark = pytest.mark.usefixtures("docker_ok")

PROVIDER = "daytona"  # the fake and provider fixtures: tests/providers/conftest.py


def test_a_command_gets_the_instance_env_its_own_and_cwd_and_nothing_of_the_launch(
    provider: DaytonaCompute, fake: DaytonaFake
) -> None:
    iid = _portal.call(provider.provision, {"env": {"INST_X": "i1"}}).instance_id
    try:
        _portal.call(provider.execute, iid, "mkdir -p sub")

        async def run() -> tuple[bytes, int]:
            script = 'echo "v=$INST_X-$CALL_X"; pwd; env | grep -c "^PRAISONAI_PTY_" || true; exit 4'
            async with await provider.open_pty(iid, command=script, cwd="sub", env={"CALL_X": "c1"}) as pty:
                return await read_all(pty), await pty.wait()

        out, code = _portal.call(run)
        assert code == 4, out
        assert b"v=i1-c1\r\n/workspace/sub\r\n0\r\n" in out, out  # the launch's variables are unset
        assert out.startswith(b"v=i1-c1"), f"the shell's prompt or the launch line leaked: {out!r}"
    finally:
        _portal.call(provider.shutdown, iid)


def test_refusals_are_ours_in_one_sentence(provider: DaytonaCompute, fake: DaytonaFake) -> None:
    from daytona import DaytonaError

    iid = _portal.call(provider.provision).instance_id
    try:
        with pytest.raises(ConfigError):
            _portal.call(lambda: provider.open_pty(iid, env={"NOT-A-NAME": "x"}))
        with pytest.raises(ConfigError, match="at most 1000"):  # the daemon's limit, ours is larger
            _portal.call(lambda: provider.open_pty(iid, cols=1001))
        with pytest.raises(PathNotFoundError):
            _portal.call(lambda: provider.open_pty(iid, cwd="no/such/dir"))
        fake.fail_next(500)  # the sandbox lookup before the session
        with pytest.raises(PraisonAIError) as caught:
            _portal.call(lambda: provider.open_pty(iid, command="true"))
        assert isinstance(caught.value.__cause__, DaytonaError)
        assert not fake.ptys._live, "a failed open left a session behind"
    finally:
        _portal.call(provider.shutdown, iid)


def test_a_terminal_resumes_a_paused_instance(provider: DaytonaCompute, fake: DaytonaFake) -> None:
    iid = _portal.call(provider.provision).instance_id
    try:
        _portal.call(provider.pause, iid)

        async def run() -> bytes:
            async with await provider.open_pty(iid, command="echo awake-$((3*3))") as pty:
                return await read_all(pty)

        assert b"awake-9" in _portal.call(run)
        assert fake.find(iid)["state"] == "started"  # type: ignore[index]
    finally:
        _portal.call(provider.shutdown, iid)


def test_output_starts_after_the_start_token_even_split_across_chunks() -> None:
    import contextlib

    from praisonai.compute.providers.daytona._pty import DaytonaPty

    pty = DaytonaPty(contextlib.AsyncExitStack(), None, "PRAISONAI_PTY=m", "tok123")
    for chunk in (b"$ exec ... $PRAISONAI_PTY_GO\r\n", b"to", b"k1", b"23hello", b"\r\n"):
        pty.on_data(chunk)
    assert [_portal.call(pty.read), _portal.call(pty.read)] == [b"hello", b"\r\n"]
    pty.release()
    assert _portal.call(pty.read) == b""
