"""``praisonai sandbox create | exec | cp | rm``: a person works by id with an instance that
outlives the command line, as with docker's commands. Real child processes, real instances."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from kit import ECHO_LINES, answers_while_open, stops_reading_when_done

from praisonai.compute.registry import compute_provider

CLI = [sys.executable, "-c", "from praisonai.cli import main; main()"]


def cli(*args: str, stdin: str | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], input=stdin, capture_output=True, text=True, timeout=120, cwd=cwd, check=False
    )


@pytest.fixture(params=["local", "docker"])
def created(request: pytest.FixtureRequest, home: Path) -> Iterator[str]:
    """An instance made by `sandbox create` in a process that has ended since; removed after."""
    provider = compute_provider(request.param)
    if reason := provider.unavailable_reason():
        pytest.skip(reason)
    made = cli("sandbox", "create", "-c", request.param, "--no-environment", "-e", "GREETING=hi")
    assert made.returncode == 0, made.stderr
    instance_id = made.stdout.strip()
    try:
        yield instance_id
    finally:
        anyio.run(provider.shutdown, instance_id)


def test_exec_runs_in_the_instance_and_exits_with_the_commands_status(created: str) -> None:
    r = cli(
        "sandbox", "exec", "-e", "X=1", created, "--", "sh", "-c", 'echo "$GREETING $X"; echo err >&2; exit 4'
    )
    assert (r.returncode, r.stdout, r.stderr) == (4, "hi 1\n", "err\n")
    assert cli("sandbox", "exec", created, "--", "mkdir", "sub").returncode == 0
    assert cli("sandbox", "exec", "-w", "sub", created, "--", "pwd").stdout.endswith("/sub\n")


def test_exec_gives_stdin_only_with_i(created: str) -> None:
    assert cli("sandbox", "exec", "-i", created, "--", "wc", "-c", stdin="four").stdout.strip() == "4"
    assert cli("sandbox", "exec", created, "--", "wc", "-c", stdin="four").stdout.strip() == "0"


def test_exec_streams_stdin_and_stops_reading_when_the_command_ends(created: str) -> None:
    answers_while_open([*CLI, "sandbox", "exec", "-i", created, "--", "sh", "-c", ECHO_LINES])
    stops_reading_when_done([*CLI, "sandbox", "exec", "-i", created, "--", "head", "-c", "4"])


def test_cp_copies_files_and_trees_both_ways(created: str, tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "sub" / "a.txt").write_text("alpha")
    os.symlink("sub/a.txt", tree / "link")
    assert cli("sandbox", "cp", str(tree), f"{created}:tree").returncode == 0  # relative: to the working dir
    shown = cli("sandbox", "exec", created, "--", "sh", "-c", "cat tree/sub/a.txt; readlink tree/link")
    assert shown.stdout == "alpha" + "sub/a.txt\n", shown.stderr
    out = tmp_path / "out"
    out.mkdir()
    assert cli("sandbox", "cp", f"{created}:tree/sub/a.txt", str(out)).returncode == 0  # into the dir
    assert cli("sandbox", "cp", f"{created}:tree", str(tmp_path / "back")).returncode == 0
    assert (out / "a.txt").read_text() == "alpha" and (
        tmp_path / "back" / "sub" / "a.txt"
    ).read_text() == "alpha"
    assert os.readlink(tmp_path / "back" / "link") == "sub/a.txt"


def test_rm_removes_it_and_then_nothing_finds_it(created: str) -> None:
    assert cli("sandbox", "rm", created).returncode == 0
    r = cli("sandbox", "exec", created, "--", "true")
    assert r.returncode == 125 and f"no instance {created!r} to run a command in" in r.stderr, r.stderr


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("cp", "a", "b"), "give INSTANCE_ID:PATH as exactly one of 'a' and 'b'"),
        (("cp", "local_0123456789ab:/a", "local_0123456789ab:/b"), "exactly one of"),
        (("exec", "nope", "--", "true"), "'nope'"),
        (("exec", "local_0123456789ab", "--", "true"), "no instance 'local_0123456789ab'"),
    ],
)
def test_mistakes_are_one_sentence(home: Path, args: tuple[str, ...], said: str) -> None:
    r = cli("sandbox", *args)
    assert r.returncode in (2, 125) and said in r.stderr and "Traceback" not in r.stderr, r.stderr
