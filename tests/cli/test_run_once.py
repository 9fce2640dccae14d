"""``praisonai sandbox run`` on docker takes the one-shot path: the command is the container's own
process (``docker run --rm``), attached before it starts and removed by the engine when it ends.

The real command in a child process against the real engine. Each case checks what the user sees
(output, exit code, stdin, timeout) and that nothing is left: no container, no ledger row. A
config that needs steps before the command falls back to the full path (instance, exec, removal).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from kit import ECHO_LINES, answers_while_open, stops_reading_when_done

from praisonai._errors import UnsupportedFeatureError
from praisonai._ledger import Ledger, home_tag

pytestmark = pytest.mark.usefixtures("docker_ok")

#: Every process's command line in the instance: the full path's instance idles under its watchdog.
PROCESSES = "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '"


def run(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    argv = [sys.executable, "-c", "from praisonai.cli import main; main()", "sandbox", "run", *args]
    return subprocess.run(argv, input=stdin, capture_output=True, timeout=120, check=False)


def assert_nothing_left() -> None:
    """No ledger row, no container of this test's home (other tests may run beside it)."""
    assert Ledger.default().entries() == []
    mine = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=praisonai.home={home_tag()}"],
        capture_output=True, text=True, check=False,
    ).stdout.split()  # fmt: skip
    assert mine == []


def test_output_streams_and_the_exit_code_is_the_commands(home: Path) -> None:
    r = run("-c", "docker", "--no-environment", "--", "sh", "-c", "echo out; echo err >&2; exit 3")
    assert (r.returncode, r.stdout, r.stderr) == (3, b"out\n", b"err\n")
    assert_nothing_left()


def test_the_command_is_the_instance_own_work_with_env_image_and_workdir(home: Path) -> None:
    r = run("-c", "docker", "--no-environment", "--image", "praisonai-sandbox:latest", "-e", "A=1 2",
            "--", "sh", "-c", f'echo "$A"; pwd; {PROCESSES}')  # fmt: skip
    assert r.returncode == 0, r.stderr
    first, second, processes = r.stdout.decode().split("\n", 2)
    assert (first, second) == ("1 2", "/workspace")
    assert "praisonai-watchdog" not in processes and "docker-init" in processes
    assert_nothing_left()


@pytest.mark.parametrize("data", [b"", b"a\nb\n", bytes(range(256)) * 4096], ids=["empty", "lines", "1MiB"])
def test_piped_stdin_reaches_the_command_and_ends(home: Path, data: bytes) -> None:
    r = run("-c", "docker", "--no-environment", "-i", "--", "sh", "-c", "wc -c; echo done", stdin=data)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [str(len(data)).encode(), b"done"]


def test_piped_stdin_streams_and_a_command_that_ends_stops_the_reading(home: Path) -> None:
    argv = [sys.executable, "-c", "from praisonai.cli import main; main()", "sandbox", "run", "-c", "docker"]
    answers_while_open([*argv, "--no-environment", "-i", "--", "sh", "-c", ECHO_LINES])
    stops_reading_when_done([*argv, "--no-environment", "-i", "--", "head", "-c", "4"])
    assert_nothing_left()


def test_a_command_past_its_timeout_is_killed_with_its_container(home: Path) -> None:
    r = run("-c", "docker", "--no-environment", "--timeout", "1", "--", "sleep", "60")
    assert r.returncode == 124 and b"timed out after 1s" in r.stderr, r.stderr
    assert_nothing_left()


def test_an_environment_with_setup_falls_back_to_the_full_path(home: Path, tmp_path: Path) -> None:
    env_file = tmp_path / "environment.yaml"
    env_file.write_text("setup: touch /tmp/set-up\ncapture: false\n")
    r = run("-c", "docker", "--environment", str(env_file), "--", "sh", "-c", f"ls /tmp/set-up; {PROCESSES}")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(b"/tmp/set-up\n") and b"praisonai-watchdog" in r.stdout
    assert_nothing_left()


def test_run_once_refuses_a_config_with_steps_and_creates_nothing(home: Path) -> None:
    from praisonai.compute.providers.docker import DockerCompute
    from praisonai.compute.providers.local import LocalCompute

    docker = DockerCompute()
    assert docker.runs_once({"env": {"A": "1"}, "network": "none", "cpu": 0.5})
    assert not any(
        docker.runs_once(c) for c in ({"setup": ["true"]}, {"packages": {"pip": ["x"]}}, {"ttl_s": 60})
    )
    assert not LocalCompute().runs_once({})
    with pytest.raises(UnsupportedFeatureError, match="packages, setup or refresh"):
        anyio.run(lambda: docker.run_once({"setup": ["true"]}, "true", timeout=5, on_output=print))
    assert_nothing_left()
