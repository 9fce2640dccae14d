"""Faults against a docker instance's own processes (its watchdog, helper and session shells).

Real engine, real containers: a fork bomb under a low pids limit, the user's env breaking PATH,
and the helper's spool deleted from inside while a command runs. Every test removes what it made.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kit import container_running, wait_until, watchdog_notices

from praisonai import _portal
from praisonai._errors import ExecError
from praisonai.compute.base import SYSTEM_PATH
from praisonai.compute.providers.docker import DockerCompute, _spec
from praisonai.compute.watchdog import WATCHDOG

pytestmark = pytest.mark.usefixtures("docker_ok")


@pytest.fixture
def provider() -> DockerCompute:
    return DockerCompute()


@pytest.fixture
def made(provider: DockerCompute) -> Iterator[Callable[..., str]]:
    """Provision; every instance made is removed afterwards, also when the test fails."""
    instances: list[str] = []

    def provision(**config: Any) -> str:
        instances.append(_portal.call(provider.provision, config).instance_id)
        return instances[-1]

    yield provision
    for instance_id in instances:
        _portal.call(provider.shutdown, instance_id)


def sh(provider: DockerCompute, instance_id: str, command: str, **kwargs: Any) -> Any:
    return _portal.call(lambda: provider.execute(instance_id, command, **kwargs))


def test_a_fork_bomb_is_killed_and_the_instance_keeps_its_files(
    provider: DockerCompute, made: Callable[..., str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bomb exhausts the pids limit: the watchdog does not die of a refused fork (which
    removed the container, files and all), it kills the bomb by its exec marker, and the
    instance answers again."""
    monkeypatch.setattr(_spec, "PIDS_LIMIT", 64)
    instance_id = made()
    _portal.call(provider.write_file, instance_id, "/workspace/keep", b"precious")
    bomb = sh(provider, instance_id, "bash -c ':(){ :|:& };:'", timeout=30)
    assert bomb.exit_code in (0, 137)  # it returns at once, or is killed (SIGKILL) while it forks
    wait_until(lambda: "reached its process limit" in watchdog_notices(instance_id), 60)
    assert container_running(instance_id), watchdog_notices(instance_id)
    assert "killed the" in watchdog_notices(instance_id)
    assert sh(provider, instance_id, "echo alive").stdout == "alive\n"
    assert _portal.call(provider.read_file, instance_id, "/workspace/keep") == b"precious"
    left = sh(provider, instance_id, "grep -l PRAISONAI_EXEC_ID /proc/[0-9]*/environ | wc -l")
    assert int(left.stdout) <= 3  # this grep's own processes: the bomb is gone


def test_the_helper_outlives_the_process_limit_and_still_reads_the_output(
    provider: DockerCompute, made: Callable[..., str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command that leaves the pids limit full and ends with something on stderr: reading that
    output needs a fork the limit refuses. The helper answers "nofork" instead of dying (which
    lost the result: "may have run"), and the read is asked again until the sleepers end."""
    monkeypatch.setattr(_spec, "PIDS_LIMIT", 64)
    instance_id = made()
    # a background loop takes every pid freed for a second or two (no fork of its own can end it:
    # `command eval`), sleepers hold them 3 s; the command itself forks nothing and says "err"
    taker = 'i=0; while [ $i -lt 100000 ]; do command eval "sleep 3 &" 2>/dev/null; i=$((i+1)); done'
    busy = "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done"
    filled = sh(provider, instance_id, f"( {taker} ) & {busy}; echo err >&2", timeout=60)
    assert (filled.exit_code, filled.stderr) == (0, "err\n"), filled

    def answers() -> bool:  # once the sleepers end: meanwhile a command is refused, not lost
        try:
            return bool(sh(provider, instance_id, "echo alive").stdout == "alive\n")
        except ExecError as exc:
            assert "process limit" in str(exc), exc
            return False

    wait_until(answers, 30)


@pytest.mark.alone  # its fork bomb's timing is what it checks
def test_a_write_refused_at_the_process_limit_never_runs_its_payload(
    provider: DockerCompute, made: Callable[..., str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write whose copy the full pids limit refuses leaves its payload unread on the helper's
    input: answered and read on, the helper took those bytes for requests and ran them. Here the
    payload is a line of shell that needs no fork; the write fails, and the line never runs."""
    monkeypatch.setattr(_spec, "PIDS_LIMIT", 64)
    instance_id = made()
    # without the exec marker (the watchdog has no command to end): takes every freed pid for a
    # few seconds, sleepers hold them 3 s
    taker = 'i=0; while [ $i -lt 300000 ]; do command eval "sleep 3 &" 2>/dev/null; i=$((i+1)); done'
    _portal.call(provider.processes.start, instance_id, f"exec env -u PRAISONAI_EXEC_ID sh -c '{taker}'")
    time.sleep(0.5)
    with pytest.raises(ExecError):  # the channel closed: "may have run", never a forged success
        _portal.call(provider.write_file, instance_id, "/workspace/note", b"echo ran >/tmp/forged\n")

    def answers() -> bool:
        try:
            return bool(sh(provider, instance_id, "echo alive").stdout == "alive\n")
        except ExecError:
            return False

    wait_until(answers, 60)
    assert sh(provider, instance_id, "[ -e /tmp/forged ] && echo ran || echo never").stdout == "never\n"


def test_a_fork_bomb_in_a_session_is_killed_too(
    provider: DockerCompute, made: Callable[..., str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session command carries a marker of its own, so the watchdog finds its bomb as well,
    and the session's shell (which carries none) survives it."""
    monkeypatch.setattr(_spec, "PIDS_LIMIT", 64)
    instance_id = made()
    session = _portal.call(provider.open_session, instance_id)
    try:
        _portal.call(lambda: session.run("cd /workspace && X=kept"))
        _portal.call(lambda: session.run("bash -c ':(){ :|:& };:'", timeout=30))
        wait_until(lambda: "reached its process limit" in watchdog_notices(instance_id), 60)
        assert container_running(instance_id), watchdog_notices(instance_id)
        assert _portal.call(lambda: session.run('echo "$PWD $X"')).stdout == "/workspace kept\n"
    finally:
        _portal.call(session.close)
    left = sh(provider, instance_id, "grep -l PRAISONAI_EXEC_ID=s_ /proc/[0-9]*/environ | wc -l")
    assert int(left.stdout) == 0  # the bomb is gone


@pytest.mark.parametrize("policy", [{"idle_timeout_s": 300}, {"auto_shutdown": False}])
def test_the_users_path_reaches_only_their_commands(
    provider: DockerCompute, made: Callable[..., str], policy: dict[str, Any]
) -> None:
    instance_id = made(env={"PATH": "/nonexistent", "PZ_MINE": "1"}, **policy)
    time.sleep(2)  # the watchdog's first ticks
    assert container_running(instance_id), watchdog_notices(instance_id)
    assert sh(provider, instance_id, 'echo "$PATH"').stdout == "/nonexistent\n"
    _portal.call(provider.write_file, instance_id, "/workspace/f", b"x")  # the helper's own tools
    assert _portal.call(provider.read_file, instance_id, "/workspace/f") == b"x"
    session = _portal.call(provider.open_session, instance_id)
    assert _portal.call(lambda: session.run('echo "$PZ_MINE"')).stdout == "1\n"
    # busy/<the session's pid>.by: its frame's, the shell's process group (/proc/$$/stat's 5th field)
    group = "read -r s </proc/$$/stat; set -- ${s##*) }; g=$3"
    forwarder = f"{group}; read -r by </tmp/.praisonai/busy/$g.by && [ -d /proc/$by ] && echo tied"
    assert _portal.call(lambda: session.run(forwarder)).stdout == "tied\n"  # see guarded_session
    process = _portal.call(provider.processes.start, instance_id, 'echo "$PATH"')
    _portal.call(lambda: provider.processes.wait(instance_id, process.process_id, timeout=30))
    assert _portal.call(provider.processes.output, instance_id, process.process_id) == b"/nonexistent\n"
    _portal.call(session.close)
    # The watchdog (docker-init's child) has an environment of its own.
    show_env = "read -r w </proc/1/task/1/children; tr '\\0' '\\n' </proc/${w%% *}/environ"
    watchdog_env = sh(provider, instance_id, show_env, env={"PATH": SYSTEM_PATH}).stdout
    assert "PZ_MINE" not in watchdog_env and "/nonexistent" not in watchdog_env


@pytest.mark.usefixtures("watchdog_only")
def test_a_deleted_spool_does_not_read_as_idle(provider: DockerCompute, made: Callable[..., str]) -> None:
    """`rm -rf` of the helper's spool removes the activity markers: the command still counts,
    and once nothing runs the instance idles out as usual."""
    instance_id = made(idle_timeout_s=2)
    session = _portal.call(provider.open_session, instance_id)
    result = _portal.call(lambda: session.run("rm -rf /tmp/.praisonai; sleep 6; echo woke", timeout=30))
    assert (result.exit_code, result.stdout) == (0, "woke\n")
    assert container_running(instance_id)
    _portal.call(session.close)
    wait_until(lambda: not container_running(instance_id), 2 + 10)


@pytest.mark.parametrize("shell", ["dash", "bash", "busybox sh"])
def test_the_watchdog_script_counts_a_running_exec_then_idles_out(shell: str, tmp_path: Path) -> None:
    """The script itself, under each shell an image may bring: `read -t` (bash, busybox) or
    `sleep` (dash) between looks. Run here, on this host's /proc, with a spool of its own."""
    if shutil.which(shell.split()[0]) is None:
        pytest.skip(f"{shell} is not installed here")
    spool, script = tmp_path / "spool", tmp_path / "watchdog.sh"
    script.write_text(WATCHDOG)
    command = subprocess.Popen(["sleep", "60"])
    watchdog = subprocess.Popen([*shell.split(), str(script), "1", "0", str(spool)])
    try:
        wait_until(lambda: (spool / "x" / ".w").exists(), 10)  # it cleared old markers: ours now
        (spool / "x" / "job.p").write_text(f"{command.pid} {os.getpid()}\n")
        time.sleep(3)
        assert watchdog.poll() is None, "an exec whose command and helper live is activity"
        command.kill()
        command.wait()  # reaped: a zombie would still be in /proc
        assert watchdog.wait(timeout=15) == 0
    finally:
        for process in (command, watchdog):
            process.kill()
            process.wait()
