"""``praisonai sandbox run`` ended by a signal: SIGTERM and SIGHUP behave like Ctrl-C.

The real command in a child process, a real docker container or local instance; the signal
arrives while the command runs, or while the instance is still being set up. Each case asserts the
shell's exit status (128 + the signal), that the instance and its ledger row are gone, and that
the command's processes died with it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from praisonai._ledger import Ledger

SIGNALS = [(signal.SIGTERM, 143), (signal.SIGHUP, 129), (signal.SIGINT, 130)]


@pytest.fixture
def start(home: Path) -> Iterator[list[subprocess.Popen[bytes]]]:
    """Starts ``praisonai`` children; kills any still running at the end."""
    children: list[subprocess.Popen[bytes]] = []
    yield children
    for child in children:
        if child.poll() is None:
            child.kill()
            child.wait()


def praisonai(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", "from praisonai.cli import main; main()", *args],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip


def wait_for_line(child: subprocess.Popen[bytes], wanted: bytes) -> None:
    assert child.stdout is not None
    line = child.stdout.readline()
    assert line.strip() == wanted, (line, child.stderr.read() if child.poll() is not None else b"")  # type: ignore[union-attr]


def instance_ids() -> list[str]:
    return [e.instance_id for e in Ledger.default().entries()]


def container_exists(instance_id: str) -> bool:
    from praisonai.compute.providers.docker import container_name

    r = subprocess.run(["docker", "inspect", container_name(instance_id)], capture_output=True, check=False)
    return r.returncode == 0


def running(marker: str) -> bool:
    return subprocess.run(["pgrep", "-f", marker], capture_output=True, check=False).returncode == 0


def end_with(child: subprocess.Popen[bytes], signum: int) -> tuple[int, str]:
    child.send_signal(signum)
    _, err = child.communicate(timeout=60)
    return child.returncode, err.decode()


@pytest.mark.parametrize(("signum", "code"), SIGNALS, ids=lambda v: getattr(v, "name", str(v)))
@pytest.mark.usefixtures("docker_ok")
def test_docker_run_ended_by_a_signal_removes_its_container(
    start: list[subprocess.Popen[bytes]], signum: int, code: int
) -> None:
    child = praisonai(
        "sandbox", "run", "-c", "docker", "--no-environment", "--", "sh", "-c", "echo up; sleep 60"
    )
    start.append(child)
    wait_for_line(child, b"up")
    [instance_id] = instance_ids()
    assert container_exists(instance_id)

    returncode, err = end_with(child, signum)
    assert returncode == code, err
    assert "Traceback" not in err and "the instance was removed" in err
    assert not container_exists(instance_id) and instance_ids() == []


@pytest.mark.parametrize(("signum", "code"), SIGNALS, ids=lambda v: getattr(v, "name", str(v)))
def test_local_run_ended_by_a_signal_removes_its_instance_and_processes(
    start: list[subprocess.Popen[bytes]], home: Path, signum: int, code: int
) -> None:
    marker = f"sleep {60 + uuid.uuid4().int % 1000}.5"  # a command line no other test runs
    child = praisonai(
        "sandbox", "run", "-c", "local", "--no-environment", "--", "sh", "-c", f"echo up; {marker}"
    )
    start.append(child)
    wait_for_line(child, b"up")
    [instance_id] = instance_ids()
    assert (home / "local" / instance_id).is_dir() and running(marker)

    returncode, err = end_with(child, signum)
    assert returncode == code, err
    assert not (home / "local" / instance_id).exists() and instance_ids() == []
    assert not running(marker)


def test_a_signal_during_setup_removes_the_half_made_instance(
    start: list[subprocess.Popen[bytes]], home: Path, tmp_path: Path
) -> None:
    """Interrupted before the command started: the instance being set up is removed too."""
    flag = tmp_path / "setup-started"
    env_file = tmp_path / "environment.yaml"
    env_file.write_text(f"setup: 'touch {flag}; sleep 60'\ncapture: false\n")
    child = praisonai("sandbox", "run", "-c", "local", "--environment", str(env_file), "--", "true")
    start.append(child)
    deadline = time.monotonic() + 60
    while not flag.exists():
        assert child.poll() is None and time.monotonic() < deadline, child.stderr.read()  # type: ignore[union-attr]
        time.sleep(0.05)
    [instance_id] = instance_ids()

    returncode, err = end_with(child, signal.SIGTERM)
    assert returncode == 143, err
    assert not (home / "local" / instance_id).exists() and instance_ids() == []
    assert not os.listdir(home / "local")
