"""Pause on any docker instance: one made to be removed once stopped (the default
``idle_action='stop'``) is frozen (``docker pause``), under runc and under gVisor, and keeps its
files and its processes; its watchdog does not take the frozen time for idleness; and one that
nobody resumes is removed by what runs outside it: the home's reaper (its retain age, its ttl),
``gc``, a resume past its ttl. Every container made is removed afterwards (``docker rm -f`` for
those made by killed children)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kit import container_state, wait_until

import praisonai
from praisonai import Sandbox, _portal
from praisonai._errors import InstanceNotFoundError
from praisonai._types import InstanceStatus
from praisonai.compute import inventory, remove_snapshot, snapshots
from praisonai.compute.config import ComputeConfig
from praisonai.compute.providers.docker import DockerCompute, _pause, container_name

_REPO = Path(praisonai.__file__).parents[1]
# Provisions a default docker instance with the lifetime given as JSON, pauses it, prints its id,
# then dies by SIGKILL: nothing of this process removes it; the home's reaper must.
_ABANDONING_CLIENT = """
import json, os, signal, sys
from praisonai import _portal
from praisonai.compute.providers.docker import DockerCompute
p = DockerCompute()
iid = _portal.call(p.provision, json.loads(sys.argv[1])).instance_id
_portal.call(p.pause, iid)
print(iid, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.fixture(params=["runc", "runsc"])
def compute(
    request: pytest.FixtureRequest, docker_ok: None, skip_unless_required: Callable[[str, str | None], None]
) -> DockerCompute:
    if request.param == "runc":
        return DockerCompute()
    runtimes = DockerCompute().api.info().get("Runtimes") or {}
    skip_unless_required("gvisor", None if "runsc" in runtimes else "the engine has no runsc runtime")
    return DockerCompute(runtime="runsc")


def _count(sb: Sandbox) -> int:
    return int(sb.exec("cat /tmp/count 2>/dev/null || echo 0").stdout)


@pytest.mark.usefixtures("home")
def test_a_default_instance_is_frozen_and_keeps_its_files_and_processes(compute: DockerCompute) -> None:
    with Sandbox.create(compute, environment=False) as sb:
        sb.write_file("notes.txt", "kept")
        sb.start("i=0; while true; do i=$((i+1)); echo $i > /tmp/c && mv /tmp/c /tmp/count; sleep 0.1; done")
        shell = sb.session()
        shell.run("export KEPT=in-the-shell")
        wait_until(lambda: _count(sb) > 3, 10)
        assert sb.pause().status is InstanceStatus.PAUSED
        assert sb.pause().status is InstanceStatus.PAUSED  # idempotent
        assert container_state(sb.id) == "paused"  # frozen, not stopped: its processes are in memory
        listed = {i.instance_id: i.status for i in _portal.call(compute.list_instances)}
        assert listed[sb.id] is InstanceStatus.PAUSED and sb.status().status is InstanceStatus.PAUSED
        before = _count_frozen_across(sb, 3.0)
        assert sb.read_file("notes.txt") == b"kept"
        assert shell.run("echo $KEPT").stdout.strip() == "in-the-shell"
        wait_until(lambda: _count(sb) > before + 5, 10)  # the same process counts on
        sb.pause()
        assert sb.exec("echo woke").stdout == "woke\n"  # a call resumes it
        assert container_state(sb.id) == "running"


def _count_frozen_across(sb: Sandbox, seconds: float) -> int:
    """The counter after ``seconds`` frozen and a resume: it grew only while the instance was not
    frozen (ten ticks a second), and it is the same process (not counting from 0)."""
    sb.resume()
    before, started = _count(sb), time.monotonic()
    sb.pause()
    time.sleep(seconds)
    assert sb.resume().status is InstanceStatus.RUNNING
    after, thawed_for = _count(sb), time.monotonic() - started - seconds
    assert before <= after <= before + 10 * thawed_for + 2, (before, after, thawed_for)
    return after


@pytest.mark.usefixtures("docker_ok", "home", "watchdog_only")
def test_the_watchdog_takes_a_thaw_for_activity_and_later_idleness_for_idleness(
    make: Callable[..., Any],
) -> None:
    provider, instance_id = make(DockerCompute(), idle_timeout_s=3)  # no call: no channel to end at the thaw
    _portal.call(provider.pause, instance_id)
    time.sleep(4.0)  # past its idle deadline, frozen
    # thawed behind praisonai's back (no resume marks activity): the watchdog's marker must
    subprocess.run(["docker", "unpause", container_name(instance_id)], check=True, capture_output=True)
    time.sleep(2.0)  # a watchdog that took the frozen time for idleness ended it within a second
    assert container_state(instance_id) == "running"
    wait_until(lambda: container_state(instance_id) == "gone", 15)  # idle again: the marker was used once


@pytest.mark.usefixtures("docker_ok", "home", "watchdog_only")
def test_a_resumed_instance_counts_its_idle_time_from_the_resume(make: Callable[..., Any]) -> None:
    provider, instance_id = make(DockerCompute(), idle_timeout_s=3)
    _portal.call(provider.pause, instance_id)
    time.sleep(2.5)  # most of its idle time spent frozen
    _portal.call(provider.resume, instance_id)
    time.sleep(2.0)  # 4.5 s since its last call, 2 s since the resume
    assert container_state(instance_id) == "running"
    wait_until(lambda: container_state(instance_id) == "gone", 15)


@pytest.mark.parametrize(
    ("lifetime", "paused_as"),
    [
        ('{"retain_s": 2}', "paused"),
        ('{"ttl_s": 4}', "paused"),
        ('{"idle_action": "pause", "retain_s": 2}', "exited"),  # stopped and kept: no watchdog runs either
    ],
    ids=["frozen-retain", "frozen-ttl", "stopped-retain"],
)
@pytest.mark.usefixtures("docker_ok", "home")
def test_a_paused_instance_nobody_resumes_is_removed_by_the_home_reaper(
    lifetime: str, paused_as: str
) -> None:
    child = subprocess.run(
        [sys.executable, "-c", _ABANDONING_CLIENT, lifetime],
        capture_output=True, text=True, timeout=120, cwd=_REPO,
    )  # fmt: skip
    instance_id = child.stdout.strip()
    assert child.returncode == -9 and instance_id.startswith("docker_"), child.stderr
    try:
        assert container_state(instance_id) == paused_as
        wait_until(lambda: container_state(instance_id) == "gone", 30)
    finally:
        subprocess.run(["docker", "rm", "-f", container_name(instance_id)], capture_output=True)


@pytest.mark.usefixtures("docker_ok", "home", "no_home_reaper")
def test_gc_removes_a_frozen_instance_past_its_retain_age(make: Callable[..., Any]) -> None:
    provider, kept = make(DockerCompute())
    _, labelled = make(DockerCompute(), retain_s=1)
    for instance_id in (kept, labelled):
        _portal.call(provider.pause, instance_id)
    time.sleep(1.5)
    removed = {o.instance.instance_id for o in inventory.gc().orphans}
    assert removed == {labelled}, removed  # its own retain age; the other has none: kept
    assert container_state(labelled) == "gone" and container_state(kept) == "paused"


@pytest.mark.usefixtures("docker_ok", "home", "watchdog_only", "no_home_reaper")
def test_a_frozen_instance_past_its_ttl_is_removed_not_resumed(make: Callable[..., Any]) -> None:
    provider, instance_id = make(DockerCompute(), ttl_s=2)
    _portal.call(provider.pause, instance_id)
    time.sleep(2.5)
    with pytest.raises(InstanceNotFoundError, match=r"was \d+s old \(ttl_s=2\): removed, not resumed"):
        _portal.call(provider.resume, instance_id)
    assert container_state(instance_id) == "gone"


@pytest.mark.usefixtures("docker_ok", "home", "watchdog_only")
def test_a_command_cannot_forge_the_pause_marker_to_outlive_its_idle_limit(make: Callable[..., Any]) -> None:
    provider, instance_id = make(DockerCompute(), idle_timeout_s=3)
    forge = f"touch /tmp/.praisonai/{_pause.FROZEN_MARKER} || ln -s / /tmp/.praisonai/{_pause.FROZEN_MARKER}"
    r = _portal.call(provider.execute, instance_id, forge)
    assert r.exit_code != 0 and "Permission denied" in r.stderr, r  # the spool is root's alone
    wait_until(lambda: container_state(instance_id) == "gone", 20)  # idle: it ends on time


@pytest.mark.usefixtures("docker_ok", "home", "no_home_reaper")
def test_a_snapshot_of_a_frozen_instance_leaves_it_frozen(make: Callable[..., Any]) -> None:
    provider, instance_id = make(DockerCompute())
    _portal.call(provider.write_file, instance_id, "a.txt", "frozen with it")
    _portal.call(provider.pause, instance_id)
    taken = _portal.call(snapshots.front(provider).take, instance_id, None)
    try:
        assert container_state(instance_id) == "paused"  # not thawed by the snapshot's own freeze
        forked = _portal.call(snapshots.provision_from, provider, ComputeConfig(), taken)
        try:
            assert _portal.call(provider.read_file, forked.instance_id, "a.txt") == b"frozen with it"
        finally:
            _portal.call(provider.shutdown, forked.instance_id)
    finally:
        assert remove_snapshot(taken)


@pytest.mark.usefixtures("docker_ok", "home", "no_home_reaper")
def test_a_call_during_a_snapshots_freeze_waits_for_its_thaw_and_does_not_thaw_it(
    make: Callable[..., Any],
) -> None:
    """A snapshot freezes the container for its commit (``docker pause``) with the ledger still
    saying running: a call that opens a channel meanwhile (another process's: a fresh provider)
    must wait for that thaw, not take the instance for paused and thaw it mid-commit."""
    _, instance_id = make(DockerCompute())
    name = container_name(instance_id)
    subprocess.run(["docker", "pause", name], check=True, capture_output=True)  # the snapshot's freeze
    answers: list[str] = []
    call = threading.Thread(
        target=lambda: answers.append(_portal.call(DockerCompute().execute, instance_id, "echo ran").stdout)
    )
    call.start()
    try:
        time.sleep(4.0)  # past the main channel's hello wait: the call has tried an exec channel too
        assert container_state(instance_id) == "paused" and not answers  # still frozen, the call waiting
    finally:
        subprocess.run(["docker", "unpause", name], capture_output=True)  # the commit is done
        call.join(60)
    assert answers == ["ran\n"]
