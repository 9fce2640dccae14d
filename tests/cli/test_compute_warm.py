"""``praisonai compute warm`` as a child process against real docker: it fills the pool and says
so in one line, ``ps`` shows the instances as warm, ``sandbox run`` claims one, and bad input
gets one sentence and makes nothing."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from kit import wait_for_refills, warm_rows
from leftovers import child_env, remove_leftovers

from praisonai._ledger import Ledger
from praisonai.compute.providers.docker import container_name


@pytest.fixture
def pool_home(home: Path, docker_ok: None) -> Iterator[Path]:
    yield home
    wait_for_refills(home)
    remove_leftovers(home, set())


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The command, run where no environment file is found (the home's parent folder)."""
    return subprocess.run(
        [sys.executable, "-m", "praisonai", *args],
        capture_output=True, text=True, timeout=180, cwd=home.parent, env=child_env(home),
    )  # fmt: skip


def test_warm_fills_ps_shows_warm_and_sandbox_run_claims(pool_home: Path) -> None:
    r = cli(pool_home, "compute", "warm", "--size", "2", "-c", "docker")
    assert r.returncode == 0, r.stderr
    said = r"docker pool of definition [0-9a-f]{16}: 2 ready \(2 made now\); "
    assert re.fullmatch(said + "unclaimed instances stop after 300s idle\n", r.stdout), r.stdout
    waiting = warm_rows(pool_home)
    assert len(waiting) == 2
    r = cli(pool_home, "compute", "ps", "--json")
    statuses = {row["instance"]: row["status"] for row in json.loads(r.stdout)}
    assert [statuses[i] for i in waiting] == ["warm", "warm"], r.stderr
    r = cli(pool_home, "compute", "warm", "--size", "2", "-c", "docker")
    assert "2 ready (0 made now)" in r.stdout, r.stderr
    r = cli(pool_home, "sandbox", "run", "-c", "docker", "--", "sh", "-c", "echo ran")
    assert (r.returncode, r.stdout) == (0, "ran\n"), r.stderr
    assert Ledger(pool_home / "ledger.sqlite3").get(waiting[0]) is None  # claimed, then removed
    subprocess.run(["docker", "rm", "-f", container_name(waiting[1])], capture_output=True, check=True)
    r = cli(pool_home, "compute", "ps", "--json")  # a warm instance gone by other hands: reconciled
    assert {row["instance"]: row["status"] for row in json.loads(r.stdout)}[waiting[1]] == "gone"
    assert Ledger(pool_home / "ledger.sqlite3").get(waiting[1]) is None


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--size", "0"], "error: --size must be a whole number of instances from 1 to 1000, not 0\n"),
        (["--size", "-1"], "error: --size must be a whole number of instances from 1 to 1000, not -1\n"),
        (["--size", "x"], "error: --size must be a whole number of instances from 1 to 1000, not str 'x'\n"),
    ],
)
def test_warm_refuses_a_bad_size_in_one_sentence(home: Path, args: list[str], said: str) -> None:
    r = cli(home, "compute", "warm", *args)
    assert (r.returncode, r.stdout, r.stderr) == (2, "", said)
    assert not (home / "ledger.sqlite3").exists()  # nothing recorded, nothing made


def test_warm_refuses_a_missing_environment_file(home: Path) -> None:
    r = cli(home, "compute", "warm", "--size", "1", "--env", "nowhere.yaml")
    said = "error: --env: no environment file at nowhere.yaml; give the path of an environment.yaml\n"
    assert (r.returncode, r.stdout, r.stderr) == (2, "", said)
    assert not (home / "ledger.sqlite3").exists()
