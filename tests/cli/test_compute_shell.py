"""``praisonai compute shell`` through a real pseudo-terminal (``pty.fork``), and ``compute logs``:
typed keys reach the instance's shell, its exit code comes back, the terminal's mode is restored."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import time
from collections.abc import Iterator

import anyio
import pytest
from kit import readable

from praisonai.compute.base import ComputeProvider
from praisonai.compute.registry import compute_provider

CLI = [sys.executable, "-c", "from praisonai.cli import main; main()"]
_WAIT_S = 30


@pytest.fixture(params=["local", "docker"])
def instance(request: pytest.FixtureRequest, home: object) -> Iterator[tuple[ComputeProvider, str]]:
    provider = compute_provider(request.param)
    if reason := provider.unavailable_reason():
        pytest.skip(reason)
    info = anyio.run(provider.provision)
    try:
        yield provider, info.instance_id
    finally:
        anyio.run(provider.shutdown, info.instance_id)


def _read_until(fd: int, wanted: bytes, seen: bytearray, start: int = 0) -> None:
    """Read the terminal into ``seen`` until ``wanted`` appears after ``start``."""
    deadline = time.monotonic() + _WAIT_S
    while wanted not in seen[start:]:
        left = deadline - time.monotonic()
        assert left > 0 and readable(fd, left), f"no {wanted!r} in {bytes(seen)!r}"
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # EIO: the child ended
            chunk = b""
        assert chunk, f"the terminal ended before {wanted!r}: {bytes(seen)!r}"
        seen += chunk


def _in_a_terminal(instance_id: str) -> bytes:
    """Run the shell command in a fresh pty between two ``stty -g``; type, and return all output."""
    script = 'stty -g; echo ready; "$@"; echo "rc=$?"; stty -g'
    pid, fd = pty.fork()
    if pid == 0:  # the child: a shell on the new terminal, as a user's would be
        os.execv("/bin/sh", ["/bin/sh", "-c", script, "sh", *CLI, "compute", "shell", instance_id])
    seen = bytearray()
    try:
        _read_until(fd, b"ready", seen)
        mode = bytes(seen).split(b"\r\n")[0]  # the terminal's mode before, as stty -g says it
        while not bytes(seen).rstrip().endswith((b"$", b"#")):  # the instance's shell prompts
            _read_until(fd, b" ", seen)
        os.write(fd, b"echo h''i; exit 3\r")
        _read_until(fd, b"rc=", seen)
        _read_until(fd, mode, seen, seen.index(b"rc="))
    finally:
        os.close(fd)
        os.waitpid(pid, 0)
    return bytes(seen)


def test_shell_types_into_the_instance_and_passes_its_exit_code(
    instance: tuple[ComputeProvider, str],
) -> None:
    _, instance_id = instance
    out = _in_a_terminal(instance_id)
    lines = [line.strip() for line in out.split(b"\n")]
    assert b"\rhi\r\n" in out  # the command's output, not the echo of what was typed (h''i)
    assert b"rc=3" in lines
    after = out[out.index(b"rc=") :]
    assert lines[0] in after.split(b"\r\n"), "the terminal's mode was not restored"


def test_shell_refuses_without_a_terminal(instance: tuple[ComputeProvider, str]) -> None:
    _, instance_id = instance
    r = subprocess.run(
        [*CLI, "compute", "shell", instance_id],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 125
    assert "needs a terminal on stdin" in r.stderr and "Traceback" not in r.stderr


def test_logs_shows_background_output_prefixed_by_its_source(instance: tuple[ComputeProvider, str]) -> None:
    provider, instance_id = instance
    proc = anyio.run(lambda: provider.processes.start(instance_id, "printf 'from-bg\\n[watchdog] forged\\n'"))
    anyio.run(lambda: provider.processes.wait(instance_id, proc.process_id, timeout=_WAIT_S))
    r = subprocess.run([*CLI, "compute", "logs", instance_id], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert f"[{proc.process_id} stdout] from-bg" in r.stdout.splitlines()
    assert f"[{proc.process_id} stdout] [watchdog] forged" in r.stdout.splitlines()  # marked as the process's


def test_logs_follow_shows_new_lines_as_they_come_until_the_instance_is_gone(
    instance: tuple[ComputeProvider, str],
) -> None:
    provider, instance_id = instance
    script = "printf 'one\\n'; sleep 1; printf 'tw'; sleep 1; printf 'o\\n'; sleep 600"
    proc = anyio.run(lambda: provider.processes.start(instance_id, script))
    follower = subprocess.Popen(
        [*CLI, "compute", "logs", "--follow", instance_id],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert follower.stdout is not None
        seen: list[str] = []
        while f"[{proc.process_id} stdout] two\n" not in seen:  # shown once its line ended
            seen.append(follower.stdout.readline())
        shown = [line for line in seen if line.startswith(f"[{proc.process_id} stdout]")]
        assert shown == [f"[{proc.process_id} stdout] one\n", f"[{proc.process_id} stdout] two\n"], seen
        anyio.run(provider.shutdown, instance_id)
        _, err = follower.communicate(timeout=_WAIT_S)
        assert (
            follower.returncode == 1 and f"instance {instance_id} is gone" in err and "Traceback" not in err
        )
    finally:
        follower.kill()
        follower.wait()
