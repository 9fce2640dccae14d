"""The Kubernetes provider's terminals (``Capability.PTY``) through the real ``kubernetes`` client
against the loopback fake, whose ``tty=true`` exec is a docker exec on a real pseudo-terminal.
What the conformance suite's pty checks (test_conformance.py: env, user, working dir, SIGWINCH,
exit codes, close) leave out: the caller's env file removed from the spool, a resize on channel
4, and the v4 subprotocol; and the fake's TTY against a second client, ``kubectl exec -it``."""

from __future__ import annotations

import fcntl
import os
import shutil
import struct
import subprocess
import termios
import time
from pathlib import Path

import anyio
import pytest
from kit import readable

pytest.importorskip(
    "kubernetes", reason="the kubernetes client is not installed (pip install 'praisonai[kubernetes]')"
)

from fakes.kubernetes import KubernetesFake
from served import IMAGE

from praisonai import _portal
from praisonai.compute.providers.kubernetes import KubernetesCompute
from praisonai.compute.testing import Context
from praisonai.compute.testing.pty import read_until

PROVIDER = "kubernetes"  # the fake, provider and ctx fixtures: tests/providers/conftest.py
_WAIT_S = 60


def test_the_callers_env_file_is_gone_once_read(ctx: Context) -> None:
    """The caller's env travels through a file of the spool's (never on a command line): it is
    removed before the program starts."""
    provider = ctx.provider
    assert isinstance(provider, KubernetesCompute)
    spool = provider._spool(ctx.instance_id)

    async def run() -> bytes:
        async with await provider.open_pty(
            ctx.instance_id, command='echo "<$MINE>"', env={"MINE": "m 1"}
        ) as pty:
            return await read_until(pty, b">")

    assert b"<m 1>" in _portal.call(run)
    files = _portal.call(lambda: provider.execute(ctx.instance_id, f"ls -a {spool}", privileged=True))
    assert files.exit_code == 0 and "pty-" not in files.stdout, files


def test_a_resize_reaches_the_program_as_sigwinch(ctx: Context, fake: KubernetesFake) -> None:
    """A resize travels on channel 4; the program is signalled and sees the new size."""
    script = "trap 'echo \"winch $(stty size)\"' WINCH; echo ready; while :; do sleep 0.1; done"
    before = len(fake.exec_log)

    async def run() -> bytes:
        async with await ctx.provider.open_pty(ctx.instance_id, command=script, cols=80, rows=24) as pty:
            await read_until(pty, b"ready")
            await pty.resize(120, 40)
            return await read_until(pty, b"winch 40 120")

    assert b"winch 40 120" in _portal.call(run)
    assert "ch4" in fake.exec_log[before:]


def test_a_terminal_over_v4(docker_ok: None, tmp_path: Path) -> None:
    """v4 has no CLOSE channel: input, output, exit code and close all work without it."""
    with KubernetesFake(protocols=("v4.channel.k8s.io",)) as server:
        p = KubernetesCompute(kubeconfig=str(server.write_kubeconfig(tmp_path / "kc")), image=IMAGE)
        iid = _portal.call(p.provision, {"auto_shutdown": False}).instance_id

        async def run() -> tuple[bytes, int]:
            async with await p.open_pty(iid, command=["/bin/sh"]) as pty:
                await pty.write(b"echo v4-$((40+2)); exit 6\n")
                seen = await read_until(pty, b"v4-42")
                with anyio.fail_after(_WAIT_S):
                    return seen, await pty.wait()

        try:
            seen, code = _portal.call(run)
            assert b"v4-42\r\n" in seen and code == 6, seen
        finally:
            _portal.call(p.shutdown, iid)


def test_kubectl_exec_it_gets_a_terminal_of_its_size(
    fake: KubernetesFake, ctx: Context, tmp_path: Path
) -> None:
    """The fake's TTY wire against kubectl's own: a terminal, sized from kubectl's resize message
    (it arrives after the start, so the program waits for it), and the exit code."""
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed")
    env = {**os.environ, "KUBECONFIG": str(fake.write_kubeconfig(tmp_path / "kc", namespace="sbx"))}
    pod = ctx.instance_id.replace("_", "-")
    script = 'i=0; while [ "$(stty size)" != "33 77" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done; '
    script += "stty size; [ -t 0 ] && echo is-a-tty; exit 5"
    main, side = os.openpty()
    fcntl.ioctl(side, termios.TIOCSWINSZ, struct.pack("HHHH", 33, 77, 0, 0))
    argv = ["kubectl", "exec", "-it", pod, "--", "/bin/sh", "-c", script]
    kubectl = subprocess.Popen(argv, stdin=side, stdout=side, stderr=side, env=env, start_new_session=True)
    os.close(side)
    try:
        out = _drain(main, time.monotonic() + _WAIT_S)
        assert kubectl.wait(timeout=_WAIT_S) == 5, out
    finally:
        os.close(main)
        if kubectl.poll() is None:
            kubectl.kill()
            kubectl.wait()
    assert b"33 77" in out and b"is-a-tty" in out, out


def _drain(fd: int, deadline: float) -> bytes:
    """What a pseudo-terminal's other side printed until it closed (EIO) or ``deadline``."""
    out = b""
    while time.monotonic() < deadline:
        if not readable(fd, 0.2):
            continue
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:  # EIO: every process on the other side has closed it
            break
        if not chunk:
            break
        out += chunk
    return out
