"""Pause and resume on a real docker engine: by hand, by this process's reaper when idle, by the
instance's watchdog when its owner is gone, and ``gc`` removing paused instances past their
retain age; the CLI's ``pause``/``resume``/``ps``. Every container made is removed afterwards,
also when a test fails (``docker rm -f`` for those made by killed children)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kit import container_state, wait_until

import praisonai
from praisonai import Sandbox, _portal
from praisonai._errors import InstanceNotFoundError, UnsupportedFeatureError
from praisonai._ledger import Ledger
from praisonai._types import InstanceStatus
from praisonai.compute import inventory
from praisonai.compute.providers.docker import DockerCompute, container_name
from praisonai.compute.testing.fake import FakeProvider

_REPO = Path(praisonai.__file__).parents[1]
# Provisions a docker instance that idleness pauses, writes a file, prints its id, then dies by
# SIGKILL: nothing of this process pauses it; its watchdog must.
_KILLED_CLIENT = """
import os, signal, sys
from praisonai import _portal
from praisonai.compute.providers.docker import DockerCompute
p = DockerCompute()
iid = _portal.call(p.provision, {"idle_timeout_s": int(sys.argv[1]), "idle_action": "pause"}).instance_id
_portal.call(p.write_file, iid, "notes.txt", "kept across idle")
print(iid, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from praisonai.cli import main; main()", *args],
        capture_output=True, text=True, timeout=120, cwd=_REPO, env=dict(os.environ),
    )  # fmt: skip


@pytest.mark.usefixtures("docker_ok", "home")
def test_the_watchdog_pauses_an_idle_instance_whose_owner_is_gone_and_connect_resumes_it() -> None:
    child = subprocess.run(
        [sys.executable, "-c", _KILLED_CLIENT, "2"], capture_output=True, text=True, timeout=120, cwd=_REPO
    )
    instance_id = child.stdout.strip()
    assert child.returncode == -9 and instance_id.startswith("docker_"), child.stderr
    try:
        wait_until(lambda: container_state(instance_id) == "exited", 20)  # stopped, and kept
        with Sandbox.connect(instance_id) as sb:
            assert sb.info.status is InstanceStatus.RUNNING and sb.id == instance_id
            assert sb.read_file("notes.txt") == b"kept across idle"
    finally:
        subprocess.run(["docker", "rm", "-f", "-v", container_name(instance_id)], capture_output=True)


@pytest.mark.usefixtures("docker_ok", "home")
def test_the_reaper_pauses_an_idle_instance_and_its_next_call_resumes_it(make: Callable[..., Any]) -> None:
    provider, instance_id = make(DockerCompute(), idle_timeout_s=1, idle_action="pause")
    _portal.call(provider.write_file, instance_id, "a.txt", "before")
    ledger = Ledger.default()
    wait_until(lambda: (row := ledger.get(instance_id)) is not None and row.state == "paused", 20)
    assert _portal.call(provider.get_status, instance_id).status is InstanceStatus.PAUSED
    r = _portal.call(provider.execute, instance_id, "cat a.txt")
    assert r.stdout == "before", r
    row = ledger.get(instance_id)
    assert row is not None and row.state == "running"


@pytest.mark.usefixtures("docker_ok", "home", "watchdog_only", "no_home_reaper")
def test_gc_removes_paused_instances_only_past_their_retain_age(make: Callable[..., Any]) -> None:
    provider, kept = make(DockerCompute(), idle_action="pause")
    _, labelled = make(DockerCompute(), idle_action="pause", retain_s=1)
    for instance_id in (kept, labelled):
        _portal.call(provider.pause, instance_id)
    time.sleep(1.5)
    removed = {o.instance.instance_id for o in inventory.gc().orphans}
    assert removed == {labelled}, removed  # its own retain age; the other has none
    assert container_state(labelled) == "gone" and container_state(kept) == "exited"
    assert not inventory.gc(retain_s=3600).orphans  # not idle that long
    outcome = inventory.gc(retain_s=1)
    assert [o.instance.instance_id for o in outcome.orphans] == [kept] and not outcome.failed
    assert container_state(kept) == "gone"


@pytest.mark.usefixtures("docker_ok", "home", "watchdog_only")
def test_the_cli_pauses_shows_the_disk_and_resumes(make: Callable[..., Any]) -> None:
    provider, instance_id = make(DockerCompute(), idle_action="pause")
    _portal.call(provider.execute, instance_id, "head -c 3000000 /dev/zero > /tmp/blob")
    r = cli("compute", "pause", instance_id)
    assert r.returncode == 0 and r.stdout.strip() == f"{instance_id}: paused", r
    r = cli("compute", "ps", "--json")
    row = next(x for x in json.loads(r.stdout) if x["instance"] == instance_id)
    assert row["status"] == "paused" and re.fullmatch(r"holds \d+\.\d MiB", row["reason"]), row
    r = cli("compute", "resume", instance_id)
    assert r.returncode == 0 and r.stdout.strip() == f"{instance_id}: running", r
    assert _portal.call(provider.execute, instance_id, "wc -c < /tmp/blob").stdout.strip() == "3000000"
    r = cli("compute", "gc", "--retain", "soon")
    assert r.returncode == 2 and "'soon' is not an age" in r.stderr and "Traceback" not in r.stderr, r


@pytest.mark.usefixtures("docker_ok", "home")
def test_pause_is_refused_in_one_sentence_where_it_cannot_be_honoured() -> None:
    with pytest.raises(UnsupportedFeatureError, match=r"cannot honour idle_action='pause'"):
        _portal.call(FakeProvider().provision, {"idle_action": "pause"})


@pytest.mark.usefixtures("docker_ok", "home")
def test_the_cli_pauses_and_resumes_an_instance_made_to_be_removed(make: Callable[..., Any]) -> None:
    _, instance_id = make(DockerCompute())  # idle_action='stop': frozen, not stopped
    r = cli("compute", "pause", instance_id)
    assert r.returncode == 0 and r.stdout.strip() == f"{instance_id}: paused", r
    assert container_state(instance_id) == "paused"
    r = cli("compute", "resume", instance_id)
    assert r.returncode == 0 and r.stdout.strip() == f"{instance_id}: running", r


@pytest.mark.usefixtures("docker_ok", "home", "watchdog_only")
def test_a_pool_pauses_on_the_instance_host_and_a_call_resumes_it(make: Callable[..., Any]) -> None:
    pool = DockerCompute(hosts=["unix:///var/run/docker.sock"])
    provider, instance_id = make(pool, idle_action="pause")
    _portal.call(provider.write_file, instance_id, "x.txt", "pooled")
    paused = _portal.call(provider.pause, instance_id)
    assert paused.status is InstanceStatus.PAUSED and paused.metadata["host"] == "unix:///var/run/docker.sock"
    assert container_state(instance_id) == "exited"
    assert _portal.call(provider.execute, instance_id, "cat x.txt").stdout == "pooled"
    assert _portal.call(provider.get_status, instance_id).status is InstanceStatus.RUNNING


@pytest.mark.usefixtures("docker_ok", "home", "watchdog_only", "no_home_reaper")
def test_a_paused_instance_past_its_ttl_is_removed_not_resumed(make: Callable[..., Any]) -> None:
    provider, instance_id = make(DockerCompute(), idle_action="pause", ttl_s=2)
    _portal.call(provider.pause, instance_id)
    time.sleep(2.5)
    with pytest.raises(InstanceNotFoundError, match=r"was \d+s old \(ttl_s=2\): removed, not resumed"):
        _portal.call(provider.resume, instance_id)
    assert container_state(instance_id) == "gone"
