"""The docker watchdog sleeps until something is due (issue 29, item 1).

An idle instance's watchdog does not wake at all: it blocks until its next deadline (idle limit,
ttl) and is woken by activity (the helper and session shells poke its FIFO). While a command of
the user's runs it looks every second, so the process-limit defense and "the countdown starts
when the command ended" keep working. Real containers (runc);
the in-process reaper is off (``watchdog_only``), so what stops an instance is inside it. Every
instance a test makes is removed afterwards, also when it fails.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kit import container_running, wait_until, watchdog_notices

from praisonai import _portal
from praisonai.compute.providers.docker import DockerCompute, _spec, container_name

pytestmark = pytest.mark.usefixtures("docker_ok")

# The watchdog's wake-ups so far, read by `docker exec` (not through the helper: no poke). "[g]":
# not this script's own command line; PID 1, docker-init, carries the watchdog's command line
# too (and wakes every second: tini's reaping).
_WAKEUPS = (
    'for f in /proc/[0-9]*/cmdline; do [ "$f" != /proc/1/cmdline ] || continue; '
    'if grep -q "praisonai-watchdo[g]" "$f" 2>/dev/null; then p=${f%/cmdline}; '
    'grep ^voluntary_ctxt_switches "$p/status"; exit; fi; done; exit 1'
)


@pytest.fixture
def made() -> Iterator[Callable[..., tuple[DockerCompute, str]]]:
    """Provision; everything made is removed afterwards, also when the test fails."""
    instances: list[tuple[DockerCompute, str]] = []

    def provision(**config: Any) -> tuple[DockerCompute, str]:
        provider = DockerCompute()
        instances.append((provider, _portal.call(provider.provision, config).instance_id))
        return instances[-1]

    yield provision
    for provider, instance_id in instances:
        _portal.call(provider.shutdown, instance_id)


def wakeups(instance_id: str) -> int:
    found = subprocess.run(
        ["docker", "exec", container_name(instance_id), "sh", "-c", _WAKEUPS],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return int(found.stdout.split()[-1])


def stopped_within(instance_id: str, deadline_s: float) -> float:
    """Seconds until the instance stopped (fails past ``deadline_s``)."""
    start = time.monotonic()
    while container_running(instance_id):
        assert time.monotonic() - start < deadline_s, f"still running after {deadline_s}s"
        time.sleep(0.1)
    return time.monotonic() - start


def execute(provider: DockerCompute, instance_id: str, command: str, **kwargs: Any) -> Any:
    return _portal.call(lambda: provider.execute(instance_id, command, **kwargs))


@pytest.mark.alone  # it counts wake-ups over a quiet while
def test_an_idle_instance_s_watchdog_does_not_wake(made: Callable[..., tuple[DockerCompute, str]]) -> None:
    """No periodic tick: over 5 idle seconds its wake-up count does not grow (it was one per
    second); a request wakes it. (runc: gVisor's /proc does not count context switches.)"""
    provider, instance_id = made(idle_timeout_s=300)
    assert execute(provider, instance_id, "true").exit_code == 0
    time.sleep(2.5)  # the look a second after that request, then the long sleep
    before = wakeups(instance_id)
    time.sleep(5)
    assert wakeups(instance_id) == before
    assert execute(provider, instance_id, "true").exit_code == 0
    time.sleep(0.5)
    assert wakeups(instance_id) > before


@pytest.mark.usefixtures("watchdog_only")
@pytest.mark.parametrize("by", ["exec", "session"])
def test_activity_moves_the_idle_deadline_to_a_full_limit_after_it(
    made: Callable[..., tuple[DockerCompute, str]], by: str
) -> None:
    """A request (the helper) or a session command (its shell) during the watchdog's sleep wakes
    it: the instance stops an idle limit after it, not earlier (nor at the limit counted from
    before it)."""
    idle = 6
    provider, instance_id = made(idle_timeout_s=idle)
    session = _portal.call(provider.open_session, instance_id) if by == "session" else None
    try:
        # The watchdog sleeps towards the deadline counted from provisioning: unwoken, it would
        # see this activity only then, and stop the instance about idle + 4 s after it.
        time.sleep(2)
        if session is None:
            assert execute(provider, instance_id, "true").exit_code == 0
        else:
            assert _portal.call(lambda: session.run("true")).exit_code == 0
        last = time.monotonic()
        stopped_within(instance_id, idle + 3)  # about a second late at most, plus docker's stop
        assert time.monotonic() - last >= idle - 0.2  # 0.2: this process's polling
    finally:
        if session is not None:
            with contextlib.suppress(Exception):  # its instance is gone: closing may fail
                _portal.call(session.close)


@pytest.mark.usefixtures("watchdog_only")
def test_the_countdown_starts_when_a_command_ends(made: Callable[..., tuple[DockerCompute, str]]) -> None:
    idle = 2
    provider, instance_id = made(idle_timeout_s=idle)
    assert execute(provider, instance_id, "sleep 4", timeout=30).exit_code == 0
    ended = time.monotonic()
    stopped_within(instance_id, idle + 4)
    assert time.monotonic() - ended >= idle - 0.2  # not counted from the command's start


@pytest.mark.usefixtures("watchdog_only")
def test_ttl_ends_a_sleeping_watchdog(made: Callable[..., tuple[DockerCompute, str]]) -> None:
    ttl = 4
    start = time.monotonic()
    provider, instance_id = made(idle_timeout_s=300, ttl_s=ttl)
    assert execute(provider, instance_id, "true").exit_code == 0
    stopped_within(instance_id, ttl + 4)
    assert time.monotonic() - start >= ttl - 0.2


def test_a_background_fork_bomb_is_found_while_nobody_sends_requests(
    made: Callable[..., tuple[DockerCompute, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A background process keeps the watchdog looking every second (it is not activity for the
    idle limit): its fork bomb, started after the last request, is killed without another."""
    monkeypatch.setattr(_spec, "PIDS_LIMIT", 64)
    provider, instance_id = made()
    _portal.call(provider.processes.start, instance_id, "sleep 3; bash -c ':(){ :|:& };:'")
    wait_until(lambda: "reached its process limit" in watchdog_notices(instance_id), 60)
    assert container_running(instance_id)
    assert execute(provider, instance_id, "echo alive").stdout == "alive\n"


# A keyed process that hops to a new pid about every millisecond (each one forks the next and
# ends), for 6 s, then a fork bomb; 300 sleepers without the exec marker make each of the
# watchdog's looks slow enough that the process it listed is gone by the time it reads it.
_HOPS_THEN_BOMB = (
    "env -u PRAISONAI_EXEC_ID sh -c 'for i in $(seq 300); do sleep 120 & done'; "
    "exec bash -c 'h() { if [ $SECONDS -lt 6 ]; then h & else b() { b | b & }; b; fi; }; h'"
)


def test_processes_that_come_and_go_keep_the_watchdog_looking(
    made: Callable[..., tuple[DockerCompute, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fork bomb's processes, growing towards the limit, each live for a moment: a look that
    found them gone before it read them took that for nothing running and slept until the idle
    limit, through the bomb (the CI saw this once). Here a hopping process does that for 6 s, and
    the bomb that follows it is still found."""
    monkeypatch.setattr(_spec, "PIDS_LIMIT", 400)
    provider, instance_id = made()
    _portal.call(provider.processes.start, instance_id, _HOPS_THEN_BOMB)
    wait_until(lambda: "reached its process limit" in watchdog_notices(instance_id), 30)
    assert execute(provider, instance_id, "echo alive").stdout == "alive\n"
