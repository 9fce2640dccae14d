"""``praisonai.compute.inventory`` from Python: ps, stop and gc on real local and docker instances.

Each test has a home of its own (``home``), so the ledger it reads holds only what it made; the
providers whose own lists are read are passed explicitly, so nothing of other processes on the
same engine is ever stopped. Everything made is removed afterwards (``make`` or ``finally``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import praisonai
from praisonai import _portal
from praisonai._errors import InvalidInstanceIdError
from praisonai._ledger import Ledger
from praisonai.compute import inventory
from praisonai.compute.base import ComputeProvider
from praisonai.compute.lifecycle import owner_tag
from praisonai.compute.providers.docker import DockerCompute
from praisonai.compute.providers.local import LocalCompute

Make = Callable[..., tuple[ComputeProvider, str]]
_REPO = Path(praisonai.__file__).parents[1]
# Provisions one local instance with the given idle timeout, prints its id and exits, leaving an
# orphan (its owner is gone). It starts no home reaper, which would remove the orphan before gc.
_ORPHAN = """
import sys, anyio
from praisonai.compute import _home_reaper
from praisonai.compute.providers.local import LocalCompute
_home_reaper.ensure_running = lambda home=None: False
print(anyio.run(LocalCompute().provision, {"idle_timeout_s": int(sys.argv[1])}).instance_id)
"""


def orphan(home: Path, idle_timeout_s: int) -> str:
    env = {**os.environ, "PRAISONAI_HOME": str(home)}
    r = subprocess.run(
        [sys.executable, "-c", _ORPHAN, str(idle_timeout_s)],
        capture_output=True, text=True, timeout=120, cwd=_REPO, env=env, check=False,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def dead_owner() -> str:
    argv = [sys.executable, "-c", "import os; print(os.getpid())"]
    gone = subprocess.run(argv, capture_output=True, text=True, check=False)
    return f"{owner_tag().rpartition(':')[0]}:{gone.stdout.strip()}"


def rows(survey: inventory.Survey) -> dict[str, inventory.Instance]:
    return {row.instance_id: row for row in survey.instances}


def test_ps_shows_a_local_instance_and_stop_removes_it(home: Path, make: Make) -> None:
    local = LocalCompute()
    _, instance_id = make(local)
    survey = inventory.ps(providers=[local])
    row = rows(survey)[instance_id]
    assert survey.problems == ()
    assert (row.provider_name, row.status, row.reason, row.owner) == ("local", "running", "", owner_tag())
    assert row.endpoint == f"local://{home / 'local' / instance_id / 'workspace'}" and row.created_at > 0
    assert row.provider is not None and row.provider.name == "local"

    outcome = inventory.stop([instance_id], providers=[local])
    assert outcome.ok and [s.instance_id for s in outcome.stopped] == [instance_id]
    assert (outcome.failed, outcome.unknown, outcome.forgotten) == ((), (), ())
    assert not (home / "local" / instance_id).exists() and Ledger.default().get(instance_id) is None
    assert instance_id not in rows(inventory.ps(providers=[local]))


@pytest.mark.usefixtures("home")
def test_stop_says_which_ids_are_unknown_and_refuses_a_non_id_before_acting(make: Make) -> None:
    local = LocalCompute()
    _, kept = make(local)
    outcome = inventory.stop(["local_0123456789ab"], providers=[local])
    assert (outcome.ok, outcome.unknown, outcome.stopped) == (False, ("local_0123456789ab",), ())
    with pytest.raises(InvalidInstanceIdError):
        inventory.stop([kept, "../etc"], providers=[local])
    assert _portal.call(local.get_status, kept).status.value == "running"  # nothing was done


@pytest.mark.usefixtures("home")
def test_stop_all_stops_every_instance_ps_shows(make: Make) -> None:
    local = LocalCompute()
    made = {make(local)[1], make(local)[1]}
    outcome = inventory.stop_all(providers=[local])
    assert outcome.ok and {s.instance_id for s in outcome.stopped} == made
    assert inventory.ps(providers=[local]).instances == ()


def test_a_row_whose_instance_vanished_is_gone_once_and_then_forgotten(home: Path) -> None:
    ledger = Ledger.default()
    ledger.record("local_00000000000a", "local", {}, dead_owner(), time.time())
    ledger.mark("local_00000000000a", "running")
    assert rows(inventory.ps(providers=[]))["local_00000000000a"].status == inventory.GONE
    assert ledger.get("local_00000000000a") is None and inventory.ps(providers=[]).instances == ()


def test_gc_removes_an_idle_orphan_and_a_dry_run_changes_nothing(home: Path) -> None:
    idle, fresh = orphan(home, idle_timeout_s=1), orphan(home, idle_timeout_s=300)
    try:
        time.sleep(1.5)
        dry = inventory.gc(dry_run=True, providers=[LocalCompute()])
        assert dry.dry_run and dry.failures == 0
        assert [(o.kind, o.instance.instance_id, o.recorded) for o in dry.orphans] == [("remove", idle, True)]
        assert "its creator" in dry.orphans[0].why and "was idle" in dry.orphans[0].why
        assert (home / "local" / idle).is_dir() and Ledger.default().get(idle) is not None

        done = inventory.gc(providers=[LocalCompute()])
        assert [o.instance.instance_id for o in done.orphans] == [idle] and done.failures == 0
        assert not (home / "local" / idle).exists() and Ledger.default().get(idle) is None
        assert (home / "local" / fresh).is_dir() and Ledger.default().get(fresh) is not None
    finally:
        for instance_id in (idle, fresh):
            _portal.call(LocalCompute().shutdown, instance_id)


@pytest.mark.usefixtures("home")
def test_gc_forgets_gone_rows_keeps_live_ones_and_reports_what_it_cannot_check() -> None:
    ledger = Ledger.default()
    ledger.record("local_00000000000a", "local", {}, dead_owner(), time.time() - 10)
    ledger.mark("local_00000000000a", "running")
    ledger.record("local_00000000000b", "local", {}, owner_tag(), time.time())  # being created by us
    ledger.record("nope_0123456789ab", "nope", {}, dead_owner(), time.time())
    outcome = inventory.gc(providers=[])
    assert [(o.kind, o.instance.instance_id, o.why) for o in outcome.orphans] == [
        ("forget", "local_00000000000a", "the instance no longer exists")
    ]
    assert len(outcome.problems) == 1 and outcome.problems[0].startswith(
        "could not check nope_0123456789ab: unknown compute provider"
    )
    assert outcome.failures == 1
    assert sorted(e.instance_id for e in ledger.entries()) == ["local_00000000000b", "nope_0123456789ab"]


@pytest.mark.usefixtures("home", "docker_ok")
def test_docker_instances_ps_stop_and_gc_of_one_the_ledger_forgot() -> None:
    docker = DockerCompute()
    made: list[str] = []
    try:
        for _ in range(2):
            made.append(_portal.call(docker.provision).instance_id)
        listed, lost = made
        row: Any = rows(inventory.ps(providers=[docker]))[listed]
        assert (row.provider_name, row.status) == ("docker", "running")
        assert inventory.stop([listed], providers=[docker]).ok
        assert listed not in rows(inventory.ps(providers=[docker]))

        Ledger.default().forget(lost)  # only the container's labels are left: an orphan of this home
        outcome = inventory.gc(providers=[docker])
        assert [(o.kind, o.instance.instance_id, o.recorded) for o in outcome.orphans] == [
            ("remove", lost, False)
        ]
        assert outcome.orphans[0].why == "labelled with this home but not in its ledger"
        assert lost not in rows(inventory.ps(providers=[docker]))
    finally:
        for instance_id in made:
            _portal.call(docker.shutdown, instance_id)
