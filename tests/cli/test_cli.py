"""The real ``praisonai`` command in a child process: exit codes, streaming, clean errors."""

from __future__ import annotations

import subprocess
import sys

import pytest


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from praisonai.cli import main; main()", *args],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_version() -> None:
    r = cli("--version")
    assert r.returncode == 0 and r.stdout.startswith("praisonai ")


def test_providers_table() -> None:
    r = cli("compute", "providers")
    assert r.returncode == 0 and "local" in r.stdout and "docker" in r.stdout


def test_run_exits_with_the_command_code_and_streams_both_streams() -> None:
    r = cli("sandbox", "run", "--compute", "local", "--", "sh", "-c", "echo out; echo err >&2; exit 3")
    assert (r.returncode, r.stdout, r.stderr.strip().splitlines()[-1]) == (3, "out\n", "err")


def test_env_option() -> None:
    r = cli("sandbox", "run", "-c", "local", "-e", "A=1 2", "--", "sh", "-c", 'echo "$A"')
    assert r.stdout == "1 2\n"


def test_timeout_is_reported() -> None:
    r = cli("sandbox", "run", "-c", "local", "--timeout", "0.5", "--", "sleep", "10")
    assert r.returncode == 124 and "timed out" in r.stderr


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("sandbox", "run", "-c", "nope", "--", "true"), "unknown compute provider 'nope'"),
        (("sandbox", "run", "-c", "local", "-e", "BAD", "--", "true"), "--env takes KEY=VALUE"),
        (("sandbox", "run", "-c", "local", "--image", "x", "--", "true"), "cannot honour image"),
    ],
)
def test_user_mistakes_are_one_line_without_traceback(args: tuple[str, ...], needle: str) -> None:
    r = cli(*args)
    assert r.returncode != 0 and needle in r.stderr and "Traceback" not in r.stderr


@pytest.mark.usefixtures("docker_ok")
def test_default_compute_runs_the_main_job_in_docker() -> None:
    r = cli("sandbox", "run", "--", "python3", "-c", "print(2+2)")
    assert (r.returncode, r.stdout) == (0, "4\n") and "compute: docker" in r.stderr
