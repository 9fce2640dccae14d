"""``praisonai compute gc`` as a child process, on orphans planted by other (dead) processes."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest

import praisonai
from praisonai._ledger import Ledger
from praisonai.compute.lifecycle import owner_tag
from praisonai.compute.providers.docker import container_name
from praisonai.compute.registry import provider_class

_REPO = Path(praisonai.__file__).parents[1]
# Provisions one instance with the given idle timeout, prints its id and exits (its owner is gone).
# It starts no home reaper process, which would remove such an orphan before gc could.
_PROVISION = """
import sys, anyio
from praisonai.compute import _home_reaper
from praisonai.compute.registry import provider_class
_home_reaper.ensure_running = lambda home=None: False
config = {"idle_timeout_s": int(sys.argv[2])}
print(anyio.run(provider_class(sys.argv[1])().provision, config).instance_id)
"""


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from praisonai.cli import main; main()", *args],
        capture_output=True, text=True, timeout=120, cwd=_REPO, env=env,
    )  # fmt: skip


@pytest.fixture
def no_docker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")


@pytest.fixture
def provision(home: Path) -> Iterator[Callable[..., str]]:
    """Make an instance in a child process that then exits; all are removed afterwards."""
    made: list[tuple[str, str, dict[str, str]]] = []

    def make(provider: str, *, idle_timeout_s: int = 300, home: Path = home) -> str:
        env = {**os.environ, "PRAISONAI_HOME": str(home)}
        r = subprocess.run(
            [sys.executable, "-c", _PROVISION, provider, str(idle_timeout_s)],
            capture_output=True, text=True, timeout=120, cwd=_REPO, env=env,
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
        made.append((provider, r.stdout.strip(), env))
        return made[-1][1]

    try:
        yield make
    finally:
        for provider, instance_id, env in made:
            if provider == "docker":
                subprocess.run(["docker", "rm", "-f", container_name(instance_id)], capture_output=True)
            else:
                root = Path(env["PRAISONAI_HOME"])
                anyio.run(provider_class(provider)(root=root / "local").shutdown, instance_id)


def dead_owner() -> str:
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    return f"{owner_tag().rpartition(':')[0]}:{gone.stdout.strip()}"


@pytest.mark.usefixtures("no_docker")
def test_gc_removes_an_idle_instance_whose_owner_died_and_dry_run_changes_nothing(
    provision: Callable[..., str], home: Path
) -> None:
    orphan = provision("local", idle_timeout_s=1)
    fresh = provision("local", idle_timeout_s=300)  # owner dead too, but not idle long enough
    time.sleep(1.5)

    dry = cli("compute", "gc", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert f"would remove {orphan} (local): its creator" in dry.stdout and fresh not in dry.stdout
    assert dry.stdout.endswith("would remove 1, would forget 0\n")
    assert (home / "local" / orphan).is_dir() and Ledger.default().get(orphan) is not None

    r = cli("compute", "gc")
    assert r.returncode == 0, r.stderr
    assert f"removed {orphan} (local): its creator" in r.stdout and "was idle" in r.stdout
    assert r.stdout.endswith("1 removed, 0 forgotten, 0 failed\n")
    assert not (home / "local" / orphan).exists() and Ledger.default().get(orphan) is None
    assert (home / "local" / fresh).is_dir() and Ledger.default().get(fresh) is not None


@pytest.mark.usefixtures("no_docker", "home")
def test_gc_forgets_rows_whose_instance_is_gone_and_keeps_live_owners_rows() -> None:
    ledger = Ledger.default()
    ledger.record("local_00000000000a", "local", {}, dead_owner(), time.time() - 10)
    ledger.mark("local_00000000000a", "running")
    ledger.record("local_00000000000b", "local", {}, owner_tag(), time.time())  # being created by us
    r = cli("compute", "gc")
    assert r.returncode == 0, r.stderr
    assert r.stdout == (
        "forgot local_00000000000a (local): the instance no longer exists\n0 removed, 1 forgotten, 0 failed\n"
    )
    assert [e.instance_id for e in ledger.entries()] == ["local_00000000000b"]


@pytest.mark.usefixtures("no_docker", "home")
def test_gc_reports_what_it_cannot_check_and_exits_1() -> None:
    Ledger.default().record("nope_0123456789ab", "nope", {}, dead_owner(), time.time())
    r = cli("compute", "gc")
    assert r.returncode == 1 and "could not check nope_0123456789ab: unknown compute provider" in r.stderr
    assert Ledger.default().get("nope_0123456789ab") is not None


@pytest.mark.usefixtures("docker_ok")
def test_gc_removes_a_container_of_this_home_that_the_ledger_forgot(
    provision: Callable[..., str], home: Path, tmp_path: Path
) -> None:
    orphan = provision("docker")
    Ledger.default().forget(orphan)  # its row is lost: only the container's labels remain
    live = provision("docker")  # owner gone, recorded, not idle: stays
    other_home = tmp_path / "other-home"
    foreign = provision("docker", home=other_home)
    Ledger(other_home / "ledger.sqlite3").forget(foreign)  # an orphan, but of another home

    dry = cli("compute", "gc", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert f"would remove {orphan} (docker): labelled with this home but not in its ledger" in dry.stdout
    assert live not in dry.stdout and foreign not in dry.stdout
    assert _exists(orphan)

    r = cli("compute", "gc")
    assert r.returncode == 0, r.stderr
    assert f"removed {orphan} (docker)" in r.stdout and live not in r.stdout and foreign not in r.stdout
    assert not _exists(orphan) and _exists(live) and _exists(foreign)


def _exists(instance_id: str) -> bool:
    return (
        subprocess.run(["docker", "inspect", container_name(instance_id)], capture_output=True).returncode
        == 0
    )
