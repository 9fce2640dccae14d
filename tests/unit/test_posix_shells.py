"""The helper (``helper.sh``) and the session shell (``session.sh``) are POSIX sh: they must work
under the small shells instances really have — dash (Debian's /bin/sh) and busybox sh (Alpine,
distroless debug images) — not only under whatever ``sh`` this machine has.

The scripts run as they do in a local instance, over a :class:`ProcessTransport`; the only change
is the program that ``sh -c`` names: the first word of the argv the runtime asks for is replaced by
the shell under test. Skipped (with the reason) when that shell is not installed; ``.ci/run``
installs both.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from praisonai._types import ExecRequest, ExecResult
from praisonai.runtime._wire import request_line
from praisonai.runtime.channel import Channel, helper_argv
from praisonai.runtime.partial import partial_name
from praisonai.runtime.session import ShellSession
from praisonai.runtime.transport import ProcessTransport

#: shell name -> the argv that replaces "sh" (``sh -c SCRIPT NAME ARGS...`` keeps its shape)
SHELLS = {"dash": ["dash"], "busybox": ["busybox", "sh"]}
_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}


@pytest.fixture(params=sorted(SHELLS))
def shell(request: pytest.FixtureRequest) -> list[str]:
    argv = SHELLS[request.param]
    found = shutil.which(argv[0])
    if found is None:
        pytest.skip(f"{request.param} is not installed (apt-get install {request.param})")
    return [found, *argv[1:]]


def _opener(shell: list[str], cwd: Path) -> Callable[[list[str]], ProcessTransport]:
    def open_transport(argv: list[str]) -> ProcessTransport:
        assert argv[:2] == ["sh", "-c"], argv  # the runtime's contract: the script is `sh -c` text
        return ProcessTransport([*shell, *argv[1:]], env={**_ENV, "HOME": str(cwd)}, cwd=str(cwd))

    return open_transport


@contextlib.asynccontextmanager
async def _channel(shell: list[str], tmp_path: Path) -> AsyncIterator[Channel]:
    spool = tmp_path / "spool"
    spool.mkdir(mode=0o700)
    channel = await Channel.open(_opener(shell, tmp_path), str(spool))
    try:
        yield channel
    finally:
        channel.close()


async def _exec(channel: Channel, command: str, cwd: Path, **options: Any) -> ExecResult:
    fields: dict[str, Any] = {"timeout": 30.0, "max_output": 1 << 20, **options}
    return await channel.exec(ExecRequest(command, cwd=str(cwd), **fields))


def test_the_helper_runs_requests_under_the_shell(shell: list[str], tmp_path: Path) -> None:
    async def main() -> None:
        async with _channel(shell, tmp_path) as channel:
            # the helper itself is the shell under test, not this machine's sh
            r = await _exec(channel, "readlink /proc/$$/exe", tmp_path)
            assert Path(r.stdout.strip()).name == Path(shell[0]).name, r

            r = await _exec(channel, 'printf out; printf "err\\n" >&2; exit 3', tmp_path)
            assert (r.stdout, r.stderr, r.exit_code, r.timed_out) == ("out", "err\n", 3, False)

            env = {"GREETING": "hi there"}
            r = await _exec(channel, 'echo "$GREETING" "$PWD"', tmp_path / "sub", env=env)
            assert r.stdout == f"hi there {tmp_path / 'sub'}\n"

            r = await _exec(channel, "cat; echo .", tmp_path, stdin=b"line one\nline two")
            assert r.stdout == "line one\nline two.\n"
            r = await _exec(channel, "cat", tmp_path)  # stdin is closed unless given
            assert (r.stdout, r.exit_code) == ("", 0)

            data = bytes(range(256)) * 64 + b"\n\x00no newline at the end"
            await channel.write_file(str(tmp_path / "deep/dir/blob.bin"), data)
            assert await channel.read_file(str(tmp_path / "deep/dir/blob.bin")) == data
            assert await channel.read_file(str(tmp_path / "deep/dir/blob.bin"), 256, 4) == bytes(range(4))
            r = await _exec(channel, "wc -c < deep/dir/blob.bin", tmp_path)
            assert r.stdout.strip() == str(len(data))
            with pytest.raises(FileNotFoundError):
                await channel.read_file(str(tmp_path / "missing.txt"))

    (tmp_path / "sub").mkdir()
    anyio.run(main)


def test_a_write_cut_inside_its_payload_keeps_the_old_file(shell: list[str], tmp_path: Path) -> None:
    """The client dies, or its stream is cut, inside a write's payload: the helper's input ends
    there. The file keeps its old content (the helper used to rename the short file over it and
    answer 0), and no partial file is left."""
    target = tmp_path / "kept.txt"
    target.write_bytes(b"old content")
    spool = tmp_path / "spool"
    spool.mkdir(mode=0o700)
    argv = helper_argv(str(spool), "NONCE")
    request = request_line("__p_write", "n1", str(target), "100", partial_name()) + b"x" * 40
    done = subprocess.run([*shell, *argv[1:]], input=request, capture_output=True, env=_ENV, timeout=30)
    assert b"n1 0\n" not in done.stdout, done.stdout
    assert target.read_bytes() == b"old content"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.txt", "spool"]


def test_a_timeout_kills_the_whole_tree_under_the_shell(shell: list[str], tmp_path: Path) -> None:
    marker = f"praisonai-shell-test-{os.getpid()}-{time.monotonic_ns()}"

    async def main() -> ExecResult:
        async with _channel(shell, tmp_path) as channel:
            # a detached grandchild and a foreground child: the kill must find both
            command = "echo started; (sleep 301 &); sleep 302; echo never"
            started = time.monotonic()
            r = await _exec(channel, command, tmp_path, timeout=1.0, env={"PRAISONAI_SHELL_TEST": marker})
            assert time.monotonic() - started < 10
            return r

    r = anyio.run(main)
    assert r.timed_out and r.stdout == "started\n" and "never" not in r.stdout, r
    deadline = time.monotonic() + 5
    while _running_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running_with(marker), "the timed-out command's processes still run"


def test_a_background_process_runs_under_the_helper(shell: list[str], tmp_path: Path) -> None:
    async def main() -> None:
        async with _channel(shell, tmp_path) as channel:
            info = await channel.start("echo from the background; exit 4", cwd=str(tmp_path), env={})
            for _ in range(200):
                (found,) = await channel.processes(info.process_id)
                if not found.running:
                    break
                await anyio.sleep(0.025)
            assert (found.state, found.exit_code) == ("exited", 4), found
            out = await channel.read_file(channel.process_file(info.process_id, "out"))
            assert out == b"from the background\n"

    anyio.run(main)


def test_the_session_shell_keeps_its_state_under_the_shell(shell: list[str], tmp_path: Path) -> None:
    async def signal_group(pgid: int, name: str) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, getattr(signal, f"SIG{name}"))

    async def kill_tree(pid: int, marker: str) -> None:  # no command here times out
        await signal_group(pid, "KILL")

    async def main() -> None:
        session = ShellSession(_opener(shell, tmp_path), signal_group, str(tmp_path), kill_tree=kill_tree)
        try:
            r = await session.run("readlink /proc/$$/exe")
            assert Path(r.stdout.strip()).name == Path(shell[0]).name, r
            r = await session.run('cd sub && COUNT=41; greet() { echo "hi $1"; }')
            assert r.exit_code == 0, r
            r = await session.run('echo "$PWD" $((COUNT + 1)); greet you; false')
            assert (r.stdout, r.exit_code) == (f"{tmp_path / 'sub'} 42\nhi you\n", 1), r
            r = await session.run("exit 7")  # the shell ends; the next command starts a new one
            assert r.exit_code == 7, r
            r = await session.run("echo $COUNT.")
            assert (r.stdout, session.restarts) == (".\n", 1), r
        finally:
            await session.close()

    (tmp_path / "sub").mkdir()
    anyio.run(main)


def _running_with(marker: str) -> list[int]:
    """The processes whose environment carries ``marker`` (inherited by every descendant)."""
    found = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        with contextlib.suppress(OSError):
            if marker.encode() in environ.read_bytes():
                found.append(int(environ.parent.name))
    return found
