"""Local and SSH instances whose client died, and clocks that jump (issue 11, defects 15 and 17).

A client SIGKILLed mid-work runs no clean-up at all; its instances must still go once idle for
their ``idle_timeout_s`` — the home's reaper process (``compute/_home_reaper``) sees to it — and
every process of an instance dies at shutdown, also those that left its process group
(``setsid``). The in-process reaper measures idleness on the monotonic clock, so stepping the
wall clock (injected through ``_reaper.wall_clock``) neither suspends nor hastens reaping.
Real processes, a real sshd; everything made is removed, also when a test fails.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kit import home_reaper_pid, processes_running, unique_marker, wait_until

import praisonai
from praisonai import _portal
from praisonai._ledger import Ledger, LedgerEntry
from praisonai.compute import _home_reaper, _reaper
from praisonai.compute.providers.local import LocalCompute
from praisonai.compute.providers.ssh import SSHCompute
from praisonai.compute.testing.sshd import SSHServer
from praisonai.runtime import owner

_REPO = Path(praisonai.__file__).parents[1]
# Provisions an instance, leaves a detached process (setsid) and a background process behind (with
# "busy", also an exec still running), prints the id, then dies by SIGKILL: no clean-up runs.
_KILLED_CLIENT = """
import json, os, signal, sys, threading, time
from praisonai import _portal
from praisonai.compute.providers.local import LocalCompute
from praisonai.compute.providers.ssh import SSHCompute
kind, idle, marker, left, spec = sys.argv[1:6]
p = LocalCompute() if kind == "local" else SSHCompute(**json.loads(spec))
iid = _portal.call(p.provision, {"idle_timeout_s": int(idle)}).instance_id
_portal.call(p.execute, iid, f"setsid sleep {marker} >/dev/null 2>&1 &")
_portal.call(p.processes.start, iid, f"sleep {marker}")
if left == "busy":
    threading.Thread(target=_portal.call, args=(p.execute, iid, f"sleep {marker}", None), daemon=True).start()
time.sleep(1)  # the background processes have started
print(iid, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


# Starts a tool call ("exec": the instance tools' execute_command; "session": the agents' shared
# session) that would touch PATH 3 s in, prints the instance id once it runs, then dies by SIGKILL.
_KILLED_MID_CALL = """
import json, os, signal, sys, threading, time
from praisonai import _portal
from praisonai.compute.providers.local import LocalCompute
from praisonai.compute.providers.ssh import SSHCompute
kind, how, marker, path, spec = sys.argv[1:6]
p = SSHCompute(**json.loads(spec)) if kind == "ssh" else LocalCompute(isolate=kind == "local-bwrap")
iid = _portal.call(p.provision, {"idle_timeout_s": 600}).instance_id
line = f"sleep {marker}; touch {path}"
if how == "exec-forged":  # the command first writes a "done" line into its own job record
    record = 'readlink /proc/[0-9]*/fd/3 2>/dev/null | grep -m1 "/$PRAISONAI_EXEC_ID.p$"'
    line = f'echo "done 0 0 forged" >>"$({record})"; {line}'
if how.startswith("exec"):
    call = lambda: _portal.call(p.execute, iid, line, None)
else:
    session = _portal.call(p.open_session, iid)
    call = lambda: _portal.call(lambda: session.run(line, timeout=None))
threading.Thread(target=call, daemon=True).start()
time.sleep(1)  # the call runs in the instance
print(iid, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


# Each line leaves a process that left the command's process group and lost its parent: a new
# session (setsid, setsid -f), a double fork, nohup, a job-control group, and two that also clear
# their environment (so they carry no marker); the last exec is still running when the client dies.
_ESCAPES = (
    "setsid sh -c 'sleep {m}' >/dev/null 2>&1 &",
    "setsid -f sleep {m} >/dev/null 2>&1",
    "( ( sleep {m} >/dev/null 2>&1 & ) & )",
    "nohup sleep {m} >/dev/null 2>&1 &",
    "sh -c 'set -m; sleep {m} >/dev/null 2>&1 &'",
    "env -i setsid -f sleep {m} >/dev/null 2>&1",
    "env -i /bin/sh -c '( setsid sleep {m} >/dev/null 2>&1 & )'",
)
# Runs every escape in an instance (also one in a session, and one in a call still running), then
# dies by SIGKILL.
_KILLED_WITH_ESCAPEES = """
import os, signal, sys, threading, time
from praisonai import _portal
from praisonai.compute.providers.local import LocalCompute
kind, marker, lines = sys.argv[1], sys.argv[2], sys.argv[3:]
p = LocalCompute(isolate=kind == "local-bwrap")
iid = _portal.call(p.provision, {"idle_timeout_s": 600}).instance_id
for line in lines:
    _portal.call(p.execute, iid, line.format(m=marker))
session = _portal.call(p.open_session, iid)  # a session's commands too
_portal.call(lambda: session.run(f"env -i setsid -f sleep {marker} >/dev/null 2>&1"))
running = f"env -i setsid -f sleep {marker} >/dev/null 2>&1; sleep {marker}"
threading.Thread(target=_portal.call, args=(p.execute, iid, running, None), daemon=True).start()
time.sleep(1)  # the running call has started its escapee
print(iid, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def gone(workspace: Path, instance_id: str, marker: str) -> bool:
    """The instance's workspace, its processes and its ledger row are all gone."""
    return (
        not workspace.exists() and not processes_running(marker) and Ledger.default().get(instance_id) is None
    )


def kill_client(
    kind: str, idle: int, marker: str, left: str = "idle", spec: dict[str, Any] | None = None
) -> str:
    child = subprocess.run(
        [sys.executable, "-c", _KILLED_CLIENT, kind, str(idle), marker, left, json.dumps(spec or {})],
        capture_output=True, text=True, timeout=120, cwd=_REPO,
    )  # fmt: skip
    instance_id = child.stdout.strip()
    assert child.returncode == -signal.SIGKILL and instance_id.startswith(f"{kind}_"), child.stderr
    return instance_id


# ---- shutdown kills by the instance's marker -----------------------------------------------------


@pytest.mark.usefixtures("home")
def test_shutdown_kills_a_setsid_child_of_an_unisolated_local_instance(make: Callable[..., Any]) -> None:
    provider, instance_id = make(LocalCompute())
    marker = unique_marker()
    try:
        _portal.call(provider.execute, instance_id, f"setsid sleep {marker} >/dev/null 2>&1 &")
        _portal.call(provider.processes.start, instance_id, f"setsid sleep {marker}")
        wait_until(lambda: len(processes_running(marker)) == 2, 10)
        assert _portal.call(provider.shutdown, instance_id) is True
        assert processes_running(marker) == []
    finally:
        for pid in processes_running(marker):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.usefixtures("home")
def test_every_local_process_carries_the_instance_marker_which_the_env_cannot_override(
    make: Callable[..., Any],
) -> None:
    provider, instance_id = make(LocalCompute(), env={"PRAISONAI_INSTANCE": "local_000000000000"})
    env = {"PRAISONAI_INSTANCE": "x"}
    shown = _portal.call(lambda: provider.execute(instance_id, "echo $PRAISONAI_INSTANCE", env=env))
    assert shown.stdout == f"{instance_id}\n"
    session = _portal.call(provider.open_session, instance_id)
    try:
        assert _portal.call(lambda: session.run("echo $PRAISONAI_INSTANCE")).stdout == f"{instance_id}\n"
    finally:
        _portal.call(session.close)


# ---- a SIGKILLed client ----------------------------------------------------------------------------


@pytest.mark.parametrize("left", ["idle", "busy"])
def test_a_sigkilled_clients_local_instance_goes_after_its_idle_timeout(home: Path, left: str) -> None:
    """Its workspace, its ledger row and every process it left (a running command too: with its
    client gone nobody waits for it) — and then the home's reaper process itself."""
    idle, marker = 3, unique_marker()
    instance_id = kill_client("local", idle, marker, left)
    try:
        assert (home / "local" / instance_id).is_dir()  # it did not die with its client
        wait_until(lambda: gone(home / "local" / instance_id, instance_id, marker), idle + 20)
        wait_until(lambda: home_reaper_pid(home) is None, 10)  # nothing left to watch: it exits
    finally:
        _portal.call(LocalCompute().shutdown, instance_id)


def test_a_sigkilled_clients_ssh_instance_goes_after_its_idle_timeout(home: Path, sshd: SSHServer) -> None:
    idle, marker = 3, unique_marker()
    spec = sshd.connect_kwargs()
    instance_id = kill_client("ssh", idle, marker, spec=spec)
    workspace = Path(sshd.home, ".praisonai", "instances", instance_id)
    try:
        assert workspace.is_dir() and processes_running(marker)
        wait_until(lambda: gone(workspace, instance_id, marker), idle + 30)
        wait_until(lambda: home_reaper_pid(home) is None, 10)
    finally:
        _portal.call(SSHCompute(**spec).shutdown, instance_id)


def test_the_next_process_of_the_home_restarts_a_missing_reaper(home: Path) -> None:
    """The reaper process is gone too (killed, or the machine rebooted): the next praisonai process
    that uses this home starts it again, and the orphan goes."""
    idle, marker = 5, unique_marker()
    instance_id = kill_client("local", idle, marker)
    try:
        wait_until(lambda: home_reaper_pid(home) is not None, 20)  # started by the client
        reaper = home_reaper_pid(home)
        assert reaper is not None
        os.kill(reaper, signal.SIGKILL)
        wait_until(lambda: home_reaper_pid(home) is None, 10)
        time.sleep(idle + 1)
        assert (home / "local" / instance_id).is_dir()  # nobody watches it now
        next_process = (
            "from praisonai.compute import _activity; import time; _activity.touch('x'); time.sleep(1)"
        )
        subprocess.run([sys.executable, "-c", next_process], check=True, timeout=60, cwd=_REPO)
        wait_until(lambda: gone(home / "local" / instance_id, instance_id, marker), 20)
        wait_until(lambda: home_reaper_pid(home) is None, 10)
    finally:
        _portal.call(LocalCompute().shutdown, instance_id)


# ---- a call whose client died is dead before anyone is told it was interrupted -------------------


@pytest.mark.parametrize(
    ("kind", "how"),
    [
        ("local", "exec"),
        ("local", "session"),
        ("local-bwrap", "exec"),
        ("local-bwrap", "session"),
        ("ssh", "exec"),
        ("ssh", "exec-forged"),
        ("ssh", "session"),
    ],
)
def test_a_call_whose_client_was_sigkilled_dies_with_it(
    home: Path, kind: str, how: str, request: pytest.FixtureRequest
) -> None:
    """Issue 26, item 9: resume tells the model the call was interrupted; by then it must be dead,
    side effects and all. The check reads the workspace from the host: asking the instance would
    start a new helper, which stops a dead helper's jobs itself and so would hide a survivor."""
    spec: dict[str, Any] = {}
    workspace = home / "local" / "{}" / "workspace"
    if kind == "ssh":
        sshd: SSHServer = request.getfixturevalue("sshd")
        spec, workspace = sshd.connect_kwargs(), Path(sshd.home, ".praisonai", "instances", "{}")
    elif kind == "local-bwrap":
        request.getfixturevalue("bwrap_ok")
    marker, name = f"3.{unique_marker().replace('.', '')}", f"late-{os.getpid()}"
    child = subprocess.run(
        [sys.executable, "-c", _KILLED_MID_CALL, kind, how, marker, name, json.dumps(spec)],
        capture_output=True, text=True, timeout=120, cwd=_REPO,
    )  # fmt: skip
    instance_id = child.stdout.strip()
    provider = SSHCompute(**spec) if kind == "ssh" else LocalCompute(isolate=kind == "local-bwrap")
    try:
        assert child.returncode == -signal.SIGKILL and instance_id, child.stderr
        _portal.call(provider.get_status, instance_id)  # what resume asks before it answers
        time.sleep(4)  # past the moment the call would have touched the file
        assert not Path(str(workspace).format(instance_id), name).exists(), (
            "the dead client's call ran on to its side effect"
        )
        assert processes_running(marker) == []
    finally:
        _portal.call(provider.shutdown, instance_id)
        for pid in processes_running(marker):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("kind", ["local", "local-bwrap"])
def test_every_process_a_sigkilled_clients_commands_started_dies_with_it_however_detached(
    home: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    """Issue 42, item 4: setsid, setsid -f, a double fork, nohup, a group of its own, and an
    escapee without the instance's marker in its environment all go with the client that started
    them, whether their command ended or still ran."""
    if kind == "local-bwrap":
        request.getfixturevalue("bwrap_ok")
    marker = unique_marker()
    child = subprocess.run(
        [sys.executable, "-c", _KILLED_WITH_ESCAPEES, kind, marker, *_ESCAPES],
        capture_output=True, text=True, timeout=120, cwd=_REPO,
    )  # fmt: skip
    instance_id = child.stdout.strip()
    try:
        assert child.returncode == -signal.SIGKILL and instance_id, child.stderr
        try:
            wait_until(lambda: processes_running(marker) == [], 10)
        except AssertionError:
            left = processes_running(marker)
            raise AssertionError(f"left running after their client died: {left}") from None
    finally:
        for pid in processes_running(marker):
            os.kill(pid, signal.SIGKILL)
        if instance_id:
            _portal.call(LocalCompute().shutdown, instance_id)


@pytest.mark.usefixtures("home")
def test_a_command_whose_keeper_was_killed_ends_killed_and_the_next_gets_a_new_keeper(
    make: Callable[..., Any], home: Path
) -> None:
    """On plain local a command runs as the user and can kill the keeper: its call then ends at
    once as killed (137), never waits for a status nobody will send, and the next call works."""
    provider, instance_id = make(LocalCompute())
    started, marker = home / "started", unique_marker()
    calls: list[Any] = []
    line = f"touch {started}; sleep {marker}"
    worker = threading.Thread(target=lambda: calls.append(_portal.call(provider.execute, instance_id, line)))
    worker.start()
    try:
        wait_until(started.exists, 10)
        keeper = owner._keeper
        assert keeper is not None
        os.kill(keeper.process.pid, signal.SIGKILL)
        worker.join(10)
        assert not worker.is_alive() and calls[0].exit_code == 128 + signal.SIGKILL
        assert processes_running(marker) == []
        assert _portal.call(provider.execute, instance_id, "echo next").stdout == "next\n"
    finally:
        for pid in processes_running(marker):
            os.kill(pid, signal.SIGKILL)
        worker.join(10)


# ---- clocks ----------------------------------------------------------------------------------------


@pytest.mark.usefixtures("home")
def test_a_wall_clock_stepped_back_does_not_suspend_idle_reaping(
    make: Callable[..., Any], home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    provider, instance_id = make(LocalCompute(), idle_timeout_s=2)
    assert _portal.call(provider.execute, instance_id, "true").ok
    monkeypatch.setattr(_reaper, "wall_clock", lambda: time.time() - 3600)  # an hour back
    wait_until(lambda: not (home / "local" / instance_id).exists(), 2 * 2 + 10)


@pytest.mark.usefixtures("home")
def test_a_wall_clock_stepped_forward_does_not_reap_an_instance_in_use_elsewhere(
    make: Callable[..., Any], home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, instance_id = make(LocalCompute(), idle_timeout_s=2)
    ledger = Ledger.default()

    def used_elsewhere(seconds: float) -> None:  # another process of this home stamps its activity
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            ledger.touch(instance_id)
            time.sleep(0.5)

    used_elsewhere(3)  # this process's reaper has read the other's stamps
    monkeypatch.setattr(_reaper, "wall_clock", lambda: time.time() + 3600)  # an hour ahead
    used_elsewhere(5)
    assert (home / "local" / instance_id).is_dir()
    wait_until(lambda: not (home / "local" / instance_id).exists(), 2 * 2 + 10)  # unused, it goes


def test_the_home_reapers_idle_clock_reads_the_wall_clock_only_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The home's reaper process trusts a row's wall-clock stamp when it first sees the row (one from
    the future is now); after that, idleness is its own monotonic time since the stamp last changed."""
    row = LedgerEntry(
        "local_0000000000aa", "local", {}, "u@h:1", created_at=1000.0, state="running", last_active=1000.0
    )
    monkeypatch.setattr(_home_reaper, "wall_clock", lambda: 1000.0 - 3600)  # stepped an hour back
    seen = _home_reaper.Seen.first(row, 50.0)
    assert (seen.active_at, seen.born_at) == (50.0, 50.0)
    monkeypatch.setattr(_home_reaper, "wall_clock", lambda: 1000.0 + 3600)  # and an hour forward
    seen.update(row, 60.0)
    assert seen.active_at == 50.0  # no new stamp: idle for 10 s, not for an hour
    seen.update(dataclasses.replace(row, last_active=990.0), 70.0)
    assert seen.active_at == 70.0  # a new stamp is activity when seen, whatever it says
