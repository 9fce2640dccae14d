"""Idle shutdown and lifetime: activity stamps, the in-process reaper, docker's watchdog.

Docker tests run on a real engine and turn the in-process reaper off (``watchdog_only``), so
that what stops the container is the dead-man's switch inside it. Every instance a test makes is
removed afterwards, also when it fails (``docker rm -f`` for those made by killed children).
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kit import wait_until

import praisonai
from praisonai import _portal
from praisonai._errors import ExecError, InstanceNotFoundError
from praisonai._ledger import Ledger, home_tag
from praisonai._lifetime import Lifetime
from praisonai.compute import _activity, _reaper
from praisonai.compute.lifecycle import LABEL_HOME
from praisonai.compute.providers.docker import DockerCompute, container_name
from praisonai.compute.providers.local import LocalCompute

_REPO = Path(praisonai.__file__).parents[1]
# Provisions a docker instance, runs a command (with "busy": and leaves one running, without a
# timeout; with "session": the same in a session), prints its id, then dies by SIGKILL: no
# clean-up of any kind runs (no atexit, no finalizer, no reaper).
_KILLED_CLIENT = """
import os, signal, sys, threading, time
from praisonai import _portal
from praisonai.compute.providers.docker import DockerCompute
p = DockerCompute()
iid = _portal.call(p.provision, {"idle_timeout_s": int(sys.argv[1])}).instance_id
assert _portal.call(p.execute, iid, "true").exit_code == 0
if sys.argv[2] == "busy":
    threading.Thread(target=_portal.call, args=(p.execute, iid, "sleep 600", None), daemon=True).start()
    time.sleep(1)
if sys.argv[2] == "session":
    session = _portal.call(p.open_session, iid)
    assert _portal.call(lambda: session.run("sleep 600", idle_timeout=1)).running
print(iid, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def container_exists(instance_id: str) -> bool:
    found = subprocess.run(["docker", "inspect", container_name(instance_id)], capture_output=True)
    return found.returncode == 0


# ---- docker: the dead-man's switch ---------------------------------------------------------


@pytest.mark.usefixtures("docker_ok", "home")
@pytest.mark.parametrize("left", ["idle", "busy", "session"])
def test_a_sigkilled_client_leaves_no_container(left: str) -> None:
    """Also when it left a command running: a job whose helper (its client's channel) died, or
    a session command whose client's connection ended, no longer counts as activity."""
    idle = 3
    child = subprocess.run(
        [sys.executable, "-c", _KILLED_CLIENT, str(idle), left],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=_REPO,
    )
    instance_id = child.stdout.strip()
    assert child.returncode == -9 and instance_id.startswith("docker_"), child.stderr
    try:
        took = wait_until(lambda: not container_exists(instance_id), idle + 15)
        assert took >= idle - 2  # it idled out (the child slept 1 s of it); it did not die with its client
    finally:
        subprocess.run(["docker", "rm", "-f", "-v", container_name(instance_id)], capture_output=True)


@pytest.mark.usefixtures("docker_ok", "watchdog_only")
@pytest.mark.alone  # a 2 s idle timeout: a loaded machine's slow first exec would be idleness
def test_a_long_exec_outlives_the_idle_timeout_and_then_the_instance_stops(make: Callable[..., Any]) -> None:
    provider, instance_id = make(DockerCompute(), idle_timeout_s=2)
    r = _portal.call(lambda: provider.execute(instance_id, "sleep 5; echo done", timeout=30))
    assert (r.exit_code, r.stdout) == (0, "done\n")
    assert _portal.call(provider.execute, instance_id, "echo still").stdout == "still\n"
    wait_until(lambda: not container_exists(instance_id), 2 + 10)


@pytest.mark.usefixtures("docker_ok", "watchdog_only")
@pytest.mark.alone  # a 2 s idle timeout, as above
def test_a_session_keeps_the_instance_while_its_command_runs_but_not_when_unused(
    make: Callable[..., Any],
) -> None:
    provider, instance_id = make(DockerCompute(), idle_timeout_s=2)
    session = _portal.call(provider.open_session, instance_id)
    quiet = _portal.call(lambda: session.run("sleep 5; echo woke", idle_timeout=0.5))
    assert quiet.running  # returned early; the command goes on
    time.sleep(3.5)  # past the idle timeout, with no traffic at all
    assert container_exists(instance_id)
    assert _portal.call(lambda: session.read(timeout=10)).stdout == "woke\n"
    # Open but unused from here on: the instance stops by itself anyway.
    wait_until(lambda: not container_exists(instance_id), 2 + 10)
    _portal.call(session.close)


@pytest.mark.usefixtures("docker_ok", "watchdog_only")
def test_ttl_stops_a_busy_instance(make: Callable[..., Any]) -> None:
    provider, instance_id = make(DockerCompute(), ttl_s=3)
    start = time.monotonic()
    with pytest.raises((ExecError, InstanceNotFoundError)):
        _portal.call(lambda: provider.execute(instance_id, "sleep 60", timeout=60))
    assert time.monotonic() - start < 3 + 10
    wait_until(lambda: not container_exists(instance_id), 10)


@pytest.mark.usefixtures("docker_ok")
def test_containers_carry_the_home_label_and_remove_themselves(make: Callable[..., Any], home: Path) -> None:
    _, instance_id = make(DockerCompute())
    attrs = DockerCompute().api.inspect_container(container_name(instance_id))
    assert attrs["Config"]["Labels"][LABEL_HOME] == home_tag(home)
    assert attrs["HostConfig"]["AutoRemove"] is True
    assert attrs["Args"][-4:] == ["praisonai-watchdog", "300", "0", "/tmp/.praisonai"]
    _, kept = make(DockerCompute(), auto_shutdown=False, ttl_s=60)
    args = DockerCompute().api.inspect_container(container_name(kept))["Args"]
    assert args[-4:] == ["praisonai-watchdog", "0", "60", "/tmp/.praisonai"]


# ---- the in-process reaper -----------------------------------------------------------------


@pytest.mark.usefixtures("home")
def test_the_reaper_shuts_down_an_idle_local_instance(make: Callable[..., Any], home: Path) -> None:
    provider, instance_id = make(LocalCompute(), idle_timeout_s=1)
    r = _portal.call(lambda: provider.execute(instance_id, "sleep 2.5; echo done"))  # busy, not idle
    assert r.stdout == "done\n"
    assert (home / "local" / instance_id).is_dir()
    wait_until(lambda: not (home / "local" / instance_id).exists(), 1 + 8)
    assert Ledger.default().get(instance_id) is None
    with pytest.raises(InstanceNotFoundError, match=r"this process shut it down: idle for \d+s"):
        _portal.call(provider.execute, instance_id, "true")


@pytest.mark.usefixtures("home")
def test_the_reaper_leaves_instances_without_auto_shutdown(make: Callable[..., Any], home: Path) -> None:
    _, instance_id = make(LocalCompute(), idle_timeout_s=1, auto_shutdown=False)
    time.sleep(3)
    assert (home / "local" / instance_id).is_dir()


@pytest.mark.usefixtures("home")
def test_the_reaper_enforces_ttl_on_a_busy_local_instance(make: Callable[..., Any], home: Path) -> None:
    provider, instance_id = make(LocalCompute(), ttl_s=2)
    start = time.monotonic()
    r = _portal.call(lambda: provider.execute(instance_id, "sleep 30", timeout=60))
    assert not r.ok and time.monotonic() - start < 2 + 8
    wait_until(lambda: not (home / "local" / instance_id).exists(), 5)


@pytest.mark.usefixtures("home")
@pytest.mark.alone  # a 2 s idle timeout, as above
def test_activity_elsewhere_in_the_ledger_keeps_an_instance(make: Callable[..., Any], home: Path) -> None:
    """Another process's stamps (flushed to the ledger) count as activity here too."""
    _, instance_id = make(LocalCompute(), idle_timeout_s=2)
    for _ in range(8):  # 4 s of activity that this process never sees itself
        Ledger.default().touch(instance_id)
        time.sleep(0.5)
    assert (home / "local" / instance_id).is_dir()


# ---- activity stamps -----------------------------------------------------------------------


@pytest.mark.usefixtures("home")
def test_stamps_reach_the_ledger_at_most_every_flush_interval(
    make: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    provider, instance_id = make(LocalCompute())
    writes: list[dict[str, float]] = []
    real = Ledger.touch_many
    monkeypatch.setattr(
        Ledger, "touch_many", lambda self, stamps: (writes.append(dict(stamps)), real(self, stamps))
    )
    before = Ledger.default().get(instance_id)
    assert before is not None
    start = time.monotonic()
    while time.monotonic() - start < 3.5:  # ~ hundreds of calls
        _portal.call(provider.write_file, instance_id, "f", b"x")
    time.sleep(_reaper.TICK_S * 2.5)
    mine = [w[instance_id] for w in writes if instance_id in w]
    assert 1 <= len(mine) <= 3.5 / _reaper.FLUSH_EVERY_S + 2
    after = Ledger.default().get(instance_id)
    assert after is not None and after.last_active >= before.last_active + 3


def test_flush_stamps_a_busy_instance_as_active_now(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.sqlite3")
    ledger.record("local_0000000000aa", "local", {}, "o", 1.0)
    with _activity.in_use("local_0000000000aa"):
        entry = dict(_activity.tracked())["local_0000000000aa"]
        entry.owned = _activity.Owned(LocalCompute(), Lifetime(True, 300.0, None), ledger, 0.0)
        entry.last -= 100  # started long ago, still running
        _reaper.flush([("local_0000000000aa", entry)], time.monotonic())
    _activity.release("local_0000000000aa")
    row = ledger.get("local_0000000000aa")
    assert row is not None and abs(row.last_active - time.time()) < 1


def test_an_older_ledger_gains_the_policy_columns(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    old = sqlite3.connect(path)
    old.execute(
        "CREATE TABLE instances (instance_id TEXT PRIMARY KEY, provider TEXT NOT NULL, spec TEXT NOT NULL,"
        " owner TEXT NOT NULL, created_at REAL NOT NULL, state TEXT NOT NULL, last_active REAL NOT NULL)"
    )
    old.execute("INSERT INTO instances VALUES ('local_1', 'local', '{}', 'o', 1.0, 'running', 1.0)")
    old.commit()
    old.close()
    ledger = Ledger(path)
    entry = ledger.get("local_1")
    assert entry is not None and entry.lifetime == Lifetime(auto_shutdown=True, idle_timeout_s=300)
    ledger.record("local_2", "local", {}, "o", 2.0, lifetime=Lifetime(False, 5, 60))
    entry = ledger.get("local_2")
    assert entry is not None and entry.lifetime == Lifetime(auto_shutdown=False, idle_timeout_s=5, ttl_s=60)


@pytest.mark.usefixtures("home")
def test_provision_records_the_policy(make: Callable[..., Any]) -> None:
    _, instance_id = make(LocalCompute(), idle_timeout_s=42, ttl_s=3600)
    entry = Ledger.default().get(instance_id)
    assert entry is not None and entry.lifetime == Lifetime(auto_shutdown=True, idle_timeout_s=42, ttl_s=3600)
    assert entry.state == "running"
