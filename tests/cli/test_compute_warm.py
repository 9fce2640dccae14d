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


#: What the old spelling of --environment says on stderr, for one release.
DEPRECATED = "deprecated: compute warm --env FILE is now --environment FILE (--env means KEY=VALUE)\n"
NOWHERE = "no environment file at nowhere.yaml; give the path of an environment.yaml\n"


def test_warm_reads_the_environment_file_under_both_spellings(pool_home: Path) -> None:
    """``--environment FILE``; ``--env FILE``, its old spelling, reads the same file into the same
    pool, with one line on stderr."""
    (pool_home.parent / "ci").mkdir()
    (pool_home.parent / "ci" / "environment.yaml").write_text("env: {MODE: ci}\n")
    args = ("compute", "warm", "--size", "1", "-c", "docker", "--json")
    r = cli(pool_home, *args, "--environment", "ci/environment.yaml")
    assert (r.returncode, r.stderr) == (0, ""), r.stderr
    made = json.loads(r.stdout)
    assert made["made"] == 1
    r = cli(pool_home, *args, "--env", "ci/environment.yaml")
    assert (r.returncode, r.stderr, json.loads(r.stdout)) == (0, DEPRECATED, {**made, "made": 0})
    r = cli(pool_home, "compute", "warm", "--size", "1", "-c", "docker", "--json")  # no file: another pool
    assert json.loads(r.stdout)["definition_hash"] != made["definition_hash"], r.stderr


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--environment", "nowhere.yaml"], "error: --environment: " + NOWHERE),
        (["--env", "nowhere.yaml"], DEPRECATED + "error: --env: " + NOWHERE),
        (
            ["--env", "MODE=ci"],
            "error: --env MODE=ci: compute warm takes no KEY=VALUE (a warm instance gets its env values when "
            "it is claimed); name the environment file with --environment FILE\n",
        ),
        (
            ["--env", "a.yaml", "--environment", "b.yaml"],
            "error: --env FILE is the old spelling of --environment FILE; give only --environment\n",
        ),
        (
            ["--environment", "bad.yaml"],
            "error: bad.yaml:1: idle_timeout: must be a whole number, not a string\n",
        ),
    ],
)
def test_warm_refuses_a_bad_environment_file_in_one_sentence(home: Path, args: list[str], said: str) -> None:
    home.parent.joinpath("bad.yaml").write_text("idle_timeout: soon\n")
    r = cli(home, "compute", "warm", "--size", "1", *args)
    assert (r.returncode, r.stdout, r.stderr) == (2, "", said)
    assert not (home / "ledger.sqlite3").exists()
