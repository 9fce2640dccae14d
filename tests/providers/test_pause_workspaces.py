"""Pause and resume where an instance is a directory (local, on this machine; ssh, on a real sshd):
a pause kills every process of the instance and keeps its files; the next call resumes it; this
process's reaper pauses it when idle, and again after a call resumed it; the home's reaper pauses
one whose owner was SIGKILLed. Every instance and process made is removed afterwards."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kit import home_reaper_pid, processes_running, unique_marker, wait_until

import praisonai
from praisonai import Sandbox, _portal
from praisonai._ledger import Ledger
from praisonai._types import InstanceStatus
from praisonai.compute.base import ComputeProvider
from praisonai.compute.providers.local import LocalCompute
from praisonai.compute.providers.ssh import SSHCompute

_REPO = Path(praisonai.__file__).parents[1]
# Provisions an instance that idleness pauses, writes a file, leaves a background process and a
# detached one behind, prints its id, then dies by SIGKILL: only the home's reaper can pause it.
_KILLED_CLIENT = """
import json, os, signal, sys, time
from praisonai import _portal
from praisonai.compute.providers.local import LocalCompute
from praisonai.compute.providers.ssh import SSHCompute
kind, marker, spec = sys.argv[1:4]
p = LocalCompute() if kind == "local" else SSHCompute(**json.loads(spec))
iid = _portal.call(p.provision, {"idle_timeout_s": 2, "idle_action": "pause"}).instance_id
_portal.call(p.write_file, iid, "notes.txt", "kept across idle")
_portal.call(p.processes.start, iid, f"sleep {marker}")
_portal.call(p.execute, iid, f"setsid sleep {marker} >/dev/null 2>&1 &")
time.sleep(0.5)
print(iid, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def _provider(kind: str, request: pytest.FixtureRequest) -> ComputeProvider:
    if kind == "local":
        return LocalCompute()
    return SSHCompute(**request.getfixturevalue("sshd").connect_kwargs())


def _state(instance_id: str) -> str | None:
    row = Ledger.default().get(instance_id)
    return None if row is None else row.state


def _kill(marker: str) -> None:
    for pid in processes_running(marker):
        os.kill(pid, signal.SIGKILL)


@pytest.mark.usefixtures("home")
@pytest.mark.parametrize("kind", ["local", "ssh"])
def test_a_pause_ends_every_process_keeps_the_files_and_a_call_resumes(
    kind: str, request: pytest.FixtureRequest, make: Callable[..., Any]
) -> None:
    provider, instance_id = make(_provider(kind, request), idle_action="pause")
    marker = unique_marker()
    try:
        _portal.call(provider.write_file, instance_id, "kept.txt", "kept")
        _portal.call(provider.processes.start, instance_id, f"sleep {marker}")
        _portal.call(provider.execute, instance_id, f"setsid sleep {marker} >/dev/null 2>&1 &")
        wait_until(lambda: len(processes_running(marker)) == 2, 10)
        assert _portal.call(provider.pause, instance_id).status is InstanceStatus.PAUSED
        assert processes_running(marker) == [] and _state(instance_id) == "paused"
        assert _portal.call(provider.get_status, instance_id).status is InstanceStatus.PAUSED
        assert (_portal.call(provider.pauser.paused_disk, instance_id) or 0) >= len("kept")
        assert _portal.call(provider.execute, instance_id, "cat kept.txt").stdout == "kept"
        assert _portal.call(provider.get_status, instance_id).status is InstanceStatus.RUNNING
        assert _state(instance_id) == "running"
    finally:
        _kill(marker)


@pytest.mark.usefixtures("home")
def test_the_reaper_pauses_an_idle_local_instance_again_after_a_call_resumed_it(
    make: Callable[..., Any],
) -> None:
    provider, instance_id = make(LocalCompute(), idle_timeout_s=1, idle_action="pause")
    _portal.call(provider.write_file, instance_id, "a.txt", "before")
    wait_until(lambda: _state(instance_id) == "paused", 15)
    assert _portal.call(provider.execute, instance_id, "cat a.txt").stdout == "before"
    assert _state(instance_id) == "running"
    wait_until(lambda: _state(instance_id) == "paused", 15)  # still this process's to reap
    assert _portal.call(provider.get_status, instance_id).status is InstanceStatus.PAUSED


@pytest.mark.parametrize("kind", ["local", "ssh"])
def test_the_home_reaper_pauses_an_idle_instance_whose_owner_was_killed(
    kind: str, home: Path, request: pytest.FixtureRequest
) -> None:
    provider, marker = _provider(kind, request), unique_marker()
    spec = json.dumps(request.getfixturevalue("sshd").connect_kwargs() if kind == "ssh" else {})
    child = subprocess.run(
        [sys.executable, "-c", _KILLED_CLIENT, kind, marker, spec],
        capture_output=True, text=True, timeout=120, cwd=_REPO,
    )  # fmt: skip
    instance_id = child.stdout.strip()
    assert child.returncode == -signal.SIGKILL and instance_id.startswith(f"{kind}_"), child.stderr
    try:
        wait_until(lambda: _state(instance_id) == "paused", 30)
        assert processes_running(marker) == []
        wait_until(lambda: home_reaper_pid(home) is None, 10)  # a paused row without a ttl: nothing to watch
        with Sandbox.connect(instance_id, provider) as sb:  # resumed
            assert sb.info.status is InstanceStatus.RUNNING
            assert sb.read_file("notes.txt") == b"kept across idle"
            assert sb.exec("echo up").stdout == "up\n"
        assert _state(instance_id) == "running"
    finally:
        _portal.call(provider.shutdown, instance_id)
        _kill(marker)
