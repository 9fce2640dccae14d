"""``praisonai compute ps`` and ``stop`` as child processes, on instances other processes made."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

import praisonai
from praisonai._ledger import Ledger
from praisonai.compute.lifecycle import owner_tag
from praisonai.compute.providers.docker import container_name
from praisonai.compute.registry import provider_class

_REPO = Path(praisonai.__file__).parents[1]
# Provisions one instance on the named provider, prints its id and exits without shutting it down.
_PROVISION = """
import sys, anyio
from praisonai.compute.registry import provider_class
print(anyio.run(provider_class(sys.argv[1])().provision).instance_id)
"""


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from praisonai.cli import main; main()", *args],
        capture_output=True, text=True, timeout=120, cwd=_REPO,
    )  # fmt: skip


def ps() -> dict[str, dict[str, Any]]:
    r = cli("compute", "ps", "--json")
    assert r.returncode == 0, r.stderr
    return {row["instance"]: row for row in json.loads(r.stdout)}


@pytest.fixture
def no_docker(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hide the Docker engine from the children, so that ``ps`` and ``stop --all`` see only this
    test's local instances, never other containers on the engine."""
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")


@pytest.fixture
def provision(home: Path) -> Iterator[Callable[[str], str]]:
    """Make an instance in a child process; every one is shut down afterwards, pass or fail."""
    made: list[tuple[str, str]] = []

    def make(provider: str) -> str:
        r = subprocess.run(
            [sys.executable, "-c", _PROVISION, provider],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=_REPO,
        )
        assert r.returncode == 0, r.stderr
        made.append((provider, r.stdout.strip()))
        return made[-1][1]

    try:
        yield make
    finally:
        for provider, instance_id in made:
            anyio.run(provider_class(provider)().shutdown, instance_id)


@pytest.mark.usefixtures("no_docker")
def test_ps_lists_an_instance_of_another_process_and_stop_removes_it(
    provision: Callable[[str], str], home: Path
) -> None:
    instance_id = provision("local")
    row = ps()[instance_id]
    assert (row["provider"], row["status"], row["reason"]) == ("local", "running", "")
    assert row["endpoint"] == f"local://{home / 'local' / instance_id / 'workspace'}"
    assert row["owner"] and isinstance(row["age_s"], float) and row["age_s"] >= 0

    r = cli("compute", "stop", instance_id)
    assert (r.returncode, r.stdout) == (0, "1 stopped, 0 failed\n"), r.stderr
    assert not (home / "local" / instance_id).exists()
    assert instance_id not in ps() and Ledger.default().get(instance_id) is None


@pytest.mark.usefixtures("home", "no_docker")  # a home of its own: other tests leave rows behind
def test_ps_table_has_the_columns() -> None:
    r = cli("compute", "ps")
    assert r.returncode == 0 and r.stdout.split() == [
        "instance",
        "provider",
        "status",
        "age",
        "owner",
        "endpoint",
    ]


@pytest.mark.usefixtures("no_docker")
def test_ps_q_prints_the_ids_alone(provision: Callable[[str], str]) -> None:
    """As docker ps -q: one id per line, for a script (managed ps -q the same)."""
    made = sorted([provision("local"), provision("local")])
    assert sorted(cli("compute", "ps", "-q").stdout.splitlines()) == made
    assert sorted(cli("managed", "ps", "--quiet").stdout.splitlines()) == made


@pytest.mark.usefixtures("no_docker")
def test_stop_all(provision: Callable[[str], str]) -> None:
    provision("local")
    provision("local")
    r = cli("compute", "stop", "--all")
    assert (r.returncode, r.stdout) == (0, "2 stopped, 0 failed\n"), r.stderr
    assert ps() == {}


@pytest.mark.usefixtures("no_docker", "home")
def test_stop_unknown_is_one_clear_line() -> None:
    r = cli("compute", "stop", "local_0123456789ab")  # an id, of no instance (a non-id: tests/bad_input)
    assert (r.returncode, r.stdout) == (1, "0 stopped, 1 failed\n")
    assert r.stderr.strip() == (
        "error: no instance 'local_0123456789ab' in the ledger or in any provider's list"
    )


@pytest.mark.usefixtures("no_docker", "home")
@pytest.mark.parametrize("args", [(), ("--all", "some_id")])
def test_stop_needs_ids_or_all(args: tuple[str, ...]) -> None:
    r = cli("compute", "stop", *args)
    assert r.returncode == 2 and "--all" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.usefixtures("no_docker")
def test_a_vanished_instance_is_shown_gone_once_and_forgotten(
    provision: Callable[[str], str], home: Path
) -> None:
    instance_id = provision("local")
    shutil.rmtree(home / "local" / instance_id)  # removed behind praisonai's back
    assert ps()[instance_id]["status"] == "gone"
    assert Ledger.default().get(instance_id) is None and instance_id not in ps()


@pytest.mark.usefixtures("no_docker", "home")
def test_a_row_not_created_yet_is_kept_while_its_creator_lives() -> None:
    """Rows are recorded before creation: "not found" only means "gone" once the creator died."""
    ledger = Ledger.default()
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    ledger.record("local_00000000000a", "local", {}, owner_tag(), time.time())
    ledger.record(
        "local_00000000000b", "local", {}, f"{owner_tag().rpartition(':')[0]}:{dead.stdout.strip()}", 1.0
    )
    rows = ps()
    assert (rows["local_00000000000a"]["status"], rows["local_00000000000b"]["status"]) == (
        "provisioning",
        "gone",
    )
    assert [e.instance_id for e in ledger.entries()] == ["local_00000000000a"]


@pytest.mark.usefixtures("no_docker", "home")
def test_an_unreachable_instance_is_shown_with_why_and_kept() -> None:
    ledger = Ledger.default()
    ledger.record(
        "docker_0123456789ab", "docker", {"base_url": "unix:///nonexistent/x.sock"}, "me@h:1", time.time()
    )
    ledger.record("nope_0123456789ab", "nope", {}, "me@h:1", time.time())
    rows = ps()
    assert rows["docker_0123456789ab"]["status"] == "unreachable" and rows["docker_0123456789ab"]["reason"]
    assert rows["nope_0123456789ab"]["reason"].startswith("unknown compute provider 'nope'")
    assert len(ledger.entries()) == 2
    r = cli("compute", "stop", "nope_0123456789ab")
    assert r.returncode == 1 and "could not stop nope_0123456789ab: unknown compute provider" in r.stderr


@pytest.mark.usefixtures("no_docker", "home")
def test_a_row_whose_options_no_longer_fit_is_one_line_not_a_traceback() -> None:
    Ledger.default().record("local_0123456789ab", "local", {"colour": "red"}, "me@h:1", time.time())
    row = ps()["local_0123456789ab"]
    why = "the recorded local options no longer fit: colour: Extra inputs are not permitted"
    assert (row["status"], row["reason"]) == ("unreachable", why)
    r = cli("compute", "stop", "local_0123456789ab")
    assert r.returncode == 1 and f"could not stop local_0123456789ab: {why}" in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.usefixtures("docker_ok")
def test_a_docker_instance_of_another_process_is_listed_and_stopped(provision: Callable[[str], str]) -> None:
    instance_id = provision("docker")
    row = ps()[instance_id]
    assert (row["provider"], row["status"]) == ("docker", "running")

    r = cli("compute", "stop", instance_id)
    assert (r.returncode, r.stdout) == (0, "1 stopped, 0 failed\n"), r.stderr
    gone = subprocess.run(
        ["docker", "inspect", container_name(instance_id)], capture_output=True, check=False
    )
    assert gone.returncode != 0 and instance_id not in ps()
