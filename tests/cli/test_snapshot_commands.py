"""``praisonai sandbox snapshot | fork | restore | create --from-snapshot`` and ``praisonai compute
snapshots [rm] | gc | ps`` as a user runs them: child processes, a throwaway home, real local and
docker instances. Every test removes what it made (the ``user`` fixture checks it did)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from praisonai import _portal
from praisonai._errors import ConfigError
from praisonai._ledger import Ledger
from praisonai.compute import inventory, list_snapshots, prune_snapshots, remove_snapshot
from praisonai.compute.base import ComputeProvider
from praisonai.compute.registry import compute_provider

CLI = [sys.executable, "-c", "from praisonai.cli import main; main()"]
DAY = 86400.0


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300, check=False)


def ok(*args: str) -> str:
    r = cli(*args)
    assert r.returncode == 0 and "Traceback" not in r.stderr, (args, r.stderr)
    return r.stdout


def refused(code: int, said: str, *args: str) -> None:
    """The command fails with one sentence on stderr, saying ``said``."""
    r = cli(*args)
    lines = r.stderr.splitlines()
    assert (r.returncode, len(lines)) == (code, 1) and said in r.stderr, (args, r.returncode, r.stderr)


async def _held(provider: ComputeProvider) -> list[str]:
    assert provider.snapshotter is not None
    return await provider.snapshotter.held()


def held(name: str) -> list[str]:
    return _portal.call(_held, compute_provider(name))


def instances() -> list[str]:
    return sorted(e.instance_id for e in Ledger.default().entries())


def backdate(snapshot_id: str, days: float) -> None:
    """Make the snapshot look ``days`` old, as if it had been taken then."""
    sql = "UPDATE snapshots SET created_at = ? WHERE id = ?"
    Ledger.default().execute(sql, (time.time() - days * DAY, snapshot_id))


@pytest.fixture(params=["local", "docker"])
def user(request: pytest.FixtureRequest, home: Path) -> Iterator[str]:
    """The provider a test works on, in a home of its own; afterwards every instance and snapshot
    it made is removed, and none is left on the provider."""
    name = request.param
    if reason := compute_provider(name).unavailable_reason():
        pytest.skip(reason)
    try:
        yield name
    finally:
        inventory.stop(instances())  # this home's: the engine's list holds every test's
        # (before the snapshots: docker keeps an image a container runs from)
        for snapshot in list_snapshots():
            remove_snapshot(snapshot)
    assert (instances(), held(name)) == ([], []), "an instance or a snapshot outlived the test"


def created(provider: str, *env: str) -> str:
    return ok("sandbox", "create", "-c", provider, "--no-environment", *env).strip()


def run(instance_id: str, line: str) -> str:
    return ok("sandbox", "exec", instance_id, "--", "sh", "-c", line)


def test_snapshot_lists_forks_starts_and_removes(user: str) -> None:
    source = created(user, "-e", "TOKEN=secret-value")
    run(source, "echo one > f")
    snap = ok("sandbox", "snapshot", source, "--name", "first").strip()
    assert snap.startswith("snap_") and held(user) == [snap]
    run(source, "echo two > f")  # the source goes on; the snapshot keeps what it had

    table = ok("compute", "snapshots").splitlines()
    assert table[0].split() == ["snapshot", "name", "provider", "source", "age", "size"]
    assert table[1].split()[:4] == [snap, "first", user, source] and len(table) == 2
    (row,) = json.loads(ok("compute", "snapshots", "--json"))
    assert (row["id"], row["name"], row["provider"], row["source"]) == (snap, "first", user, source)
    assert row["created_at"].endswith("Z") and (row["size_bytes"] is None or row["size_bytes"] > 0)

    forks = ok("sandbox", "fork", source, "-n", "3", "--no-environment").splitlines()
    assert len(set(forks)) == 3 and source not in forks
    for index, fork in enumerate(forks):  # each its own: a different command in each
        run(fork, f"echo {index} >> f")
    assert [run(f, "cat f") for f in forks] == ["two\n0\n", "two\n1\n", "two\n2\n"]
    assert run(forks[0], 'echo "${TOKEN-unset}"') == "unset\n"  # the source's env is not in a fork

    started = ok("sandbox", "create", "--from-snapshot", "first", "--no-environment", "-e", "X=1").strip()
    assert run(started, 'cat f; echo "$X"') == "one\n1\n"
    fork_snapshot = next(s.id for s in list_snapshots() if s.id != snap)
    ok("compute", "stop", *forks, started)
    assert ok("compute", "snapshots", "rm", "first", fork_snapshot) == (
        f"removed {snap} (first)\nremoved {fork_snapshot}\n"
    )
    assert (list_snapshots(), held(user)) == ([], [])


def test_restore_rolls_local_back_and_docker_says_how_instead(user: str) -> None:
    source = created(user)
    run(source, "echo before > f")
    snap = ok("sandbox", "snapshot", source).strip()
    run(source, "echo after > f; touch new")
    if user == "local":
        assert ok("sandbox", "restore", source, snap) == f"{source}: restored to {snap}\n"
        assert run(source, "cat f; ls") == "before\nf\n"
    else:
        refused(2, "docker cannot roll instance", "sandbox", "restore", source, snap)
        assert run(source, "cat f") == "after\n"


def test_bad_input_is_one_sentence_and_makes_nothing(user: str) -> None:
    source = created(user)
    snap = ok("sandbox", "snapshot", source, "--name", "kept").strip()
    other = "docker" if user == "local" else "local"
    before = (instances(), list_snapshots(), held(user))
    for n in ("0", "65", "-1"):
        refused(2, f"fork makes 1 to 64 instances, not {n}", "sandbox", "fork", source, "-n", n)
    refused(2, "no snapshot 'nope' in this home", "sandbox", "create", "--from-snapshot", "nope")
    refused(2, "no snapshot 'nope' in this home", "sandbox", "restore", source, "nope")
    refused(2, "no snapshot 'nope' in this home", "compute", "snapshots", "rm", snap, "nope")  # none go
    said = f"is a {user} snapshot; only the {user} provider starts from it, not {other}"
    if compute_provider(other).unavailable_reason() is None:
        refused(2, said, "sandbox", "create", "--from-snapshot", snap, "-c", other, "--no-environment")
    refused(2, "exclude each other", "sandbox", "create", "--from-snapshot", snap, "--image", "x")
    refused(2, "a snapshot named 'kept' exists already", "sandbox", "snapshot", source, "--name", "kept")
    refused(2, "is not a snapshot name", "sandbox", "snapshot", source, "--name", "two words")
    refused(2, "or the name is a snapshot id", "sandbox", "snapshot", source, "--name", "snap_0123456789ab")
    missing = f"{user}_0123456789ab"
    refused(1, f"no instance {missing!r} to snapshot", "sandbox", "snapshot", missing)
    refused(1, f"no instance {missing!r} to fork", "sandbox", "fork", missing, "-n", "2")
    assert (instances(), list_snapshots(), held(user)) == before


def test_gc_removes_exactly_the_expired_snapshots(user: str) -> None:
    source = created(user)
    old, older, fresh = (ok("sandbox", "snapshot", source).strip() for _ in range(3))
    backdate(old, 15)  # past the default 14 days
    backdate(older, 30)
    backdate(fresh, 13)
    assert "snapshot" not in ok("compute", "gc", "--dry-run", "--snapshots-older-than", "31")
    dry = ok("compute", "gc", "--dry-run")
    assert f"would remove snapshot {older}" in dry and f"would remove snapshot {old}" in dry
    assert fresh not in dry and len(list_snapshots()) == 3  # a dry run changes nothing

    out = ok("compute", "gc")
    assert f"removed snapshot {old}" in out and f"removed snapshot {older}" in out
    assert "snapshots: 2 removed, 0 kept in use, 0 failed" in out
    assert [s.id for s in list_snapshots()] == [fresh] and held(user) == [fresh]
    assert instances() == [source]  # gc left the running instance alone

    newest = ok("sandbox", "snapshot", source).strip()
    report = json.loads(ok("compute", "gc", "--snapshots-keep", "1", "--json"))
    assert [(s["snapshot"], s["outcome"]) for s in report["snapshots"]] == [(fresh, "removed")]
    assert report["failures"] == 0 and [s.id for s in list_snapshots()] == [newest]
    refused(2, "--snapshots-keep must be a count >= 0", "compute", "gc", "--snapshots-keep", "-1")
    refused(2, "--snapshots-older-than must be", "compute", "gc", "--snapshots-older-than", "nan")


def test_gc_keeps_an_expired_docker_snapshot_an_instance_still_runs_from(home: Path) -> None:
    if reason := compute_provider("docker").unavailable_reason():
        pytest.skip(reason)
    try:
        source = created("docker")
        (fork,) = ok("sandbox", "fork", source, "-n", "1", "--no-environment").split()
        (snap,) = (s.id for s in list_snapshots())
        backdate(snap, 30)
        out = ok("compute", "gc")  # kept is not a failure: exit 0
        assert f"kept snapshot {snap}, in use:" in out and "snapshots: 0 removed, 1 kept in use" in out
        assert held("docker") == [snap]
        ok("compute", "stop", fork)
        assert f"removed snapshot {snap}" in ok("compute", "gc")
        assert held("docker") == []
    finally:
        inventory.stop(instances())  # this home's alone, never the engine's whole list
        for snapshot in list_snapshots():
            remove_snapshot(snapshot)
    assert instances() == [] and held("docker") == []


def test_ps_says_how_many_snapshots_are_kept(user: str) -> None:
    source = created(user)
    ok("sandbox", "snapshot", source)
    r = cli("compute", "ps")
    assert r.returncode == 0 and "1 snapshot kept: `praisonai compute snapshots` lists them" in r.stderr
    assert "snapshot" not in cli("compute", "ps", "-q").stderr


#: What a forged row would send to a terminal: an OSC 52 clipboard write, a screen clear, a one-byte
#: CSI, a bell, a bidi override and a newline that would fake a row of its own.
FORGED = "x\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J\x9b31m\u202eevil\nsnap_000000000000"


def test_a_forged_snapshot_row_sends_no_escape_to_the_terminal(user: str) -> None:
    source = created(user)
    snap = ok("sandbox", "snapshot", source).strip()
    sql = "UPDATE snapshots SET name = ?, source = ?, provider = provider WHERE id = ?"
    Ledger.default().execute(sql, (FORGED, FORGED, snap))  # as a process of the home could write it
    backdate(snap, 30)
    outputs = [
        cli("compute", "snapshots"),
        cli("compute", "snapshots", "--json"),
        cli("compute", "gc", "--dry-run"),
        cli("compute", "ps"),
        cli("sandbox", "snapshot", source, "--name", FORGED),  # refused, and quoted harmlessly
        cli("compute", "snapshots", "rm", snap),
    ]
    for r in outputs:
        for text in (r.stdout, r.stderr):
            assert not {"\x1b", "\x07", "\x9b", "\u202e"} & set(text), repr(text)
    table = outputs[0].stdout.splitlines()
    assert len(table) == 2 and "\ufffd" in table[1]  # one row: the newline did not make another
    assert json.loads(outputs[1].stdout)[0]["name"] == FORGED  # JSON keeps the value, escaped
    assert outputs[4].returncode == 2 and outputs[5].returncode == 0 and list_snapshots() == []


@pytest.mark.parametrize(
    ("age", "keep"), [(-1.0, None), (float("nan"), None), (float("inf"), None), (None, -1), (None, True)]
)
def test_prune_snapshots_refuses_what_no_age_or_count_means(
    home: Path, age: float | None, keep: object
) -> None:
    with pytest.raises(ConfigError, match="must be"):
        prune_snapshots(older_than_s=age, keep=keep)  # type: ignore[arg-type]
