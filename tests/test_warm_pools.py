"""Shared warm pools (``praisonai.compute.warm``), against real Docker and real processes: claims
from many processes at once never share an instance, a claim in another process binds its env,
a definition that differs is not claimed, a dead warm instance is skipped, and a warm instance
past its idle limit is left to its watchdog. Every test's home is its own, and everything it
made (containers, rows, refill children) is gone afterwards, pass or fail."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kit import stop_home, wait_for_refills, warm_rows
from leftovers import child_env, remove_leftovers

from praisonai import _portal
from praisonai._ledger import Ledger
from praisonai.compute.config import ComputeConfig
from praisonai.compute.providers.docker import DockerCompute, container_name
from praisonai.compute.warm import WarmPool, claim, fill

# A child process that claims: waits at the barrier (the file "go" in its folder), claims
# ROUNDS times through the library's claim (None when the pool is empty), shuts each instance
# down, and prints the ids it got as JSON.
_CLAIMER = """
import faulthandler, json, sys, time, anyio
faulthandler.dump_traceback_later(150, exit=True)  # a hang says where, before the test's timeout
from pathlib import Path
from praisonai.compute.config import ComputeConfig
from praisonai.compute.providers.docker import DockerCompute
from praisonai.compute.warm import claim

folder, rounds = Path(sys.argv[1]), int(sys.argv[2])
provider, config = DockerCompute(), ComputeConfig()
(folder / f"ready-{sys.argv[3]}").touch()
while not (folder / "go").exists():
    time.sleep(0.001)

async def main():
    got = []
    for _ in range(rounds):
        info = await claim(provider, config)
        if info is not None:
            got.append(info.instance_id)
    for instance_id in got:
        await provider.shutdown(instance_id)
    return got

print(json.dumps(anyio.run(main)))
"""

# A child that takes an instance as any user does, runs a command in it and prints the result.
_CREATE = """
import json, sys
from praisonai import Sandbox
with Sandbox.create("docker", env={"TOKEN": sys.argv[1]}, environment=False) as sb:
    print(json.dumps([sb.id, sb.exec("echo $TOKEN").stdout.strip()]))
"""


@pytest.fixture
def pool_home(home: Path, docker_ok: None) -> Iterator[Path]:
    """This test's home; afterwards its refills are waited for and everything it made removed."""
    yield home
    wait_for_refills(home)
    remove_leftovers(home, set())


def run_child(code: str, *args: str, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=180, env=child_env(home)
    )


def test_claims_from_ten_processes_never_share_an_instance(pool_home: Path, tmp_path: Path) -> None:
    """10 processes x 10 claims against a pool of 5, all let go at once: every id handed out once,
    and once the refills end and the rest is stopped, no container and no row is left."""
    made = _portal.call(fill, DockerCompute(), ComputeConfig(), 5)
    assert made == 5 and len(warm_rows(pool_home)) == 5
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    env = child_env(pool_home)
    argv = [sys.executable, "-c", _CLAIMER, str(barrier), "10"]
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True, "env": env}
    children = [subprocess.Popen([*argv, str(i)], **pipes) for i in range(10)]  # type: ignore[call-overload]
    try:
        deadline = time.monotonic() + 120
        while len(list(barrier.glob("ready-*"))) < 10 and time.monotonic() < deadline:
            time.sleep(0.01)
        (barrier / "go").touch()
        outputs = [child.communicate(timeout=180) for child in children]
    finally:
        for child in children:
            child.kill()
    assert all(child.returncode == 0 for child in children), [err for _, err in outputs]
    claimed = [i for out, _ in outputs for i in json.loads(out)]
    assert len(claimed) >= 5, claimed  # the pool's five, and whatever refills added meanwhile
    assert len(claimed) == len(set(claimed)), f"handed out twice: {claimed}"
    wait_for_refills(pool_home)
    stop_home(pool_home)  # what refills made meanwhile
    assert remove_leftovers(pool_home, set()) == {}


def test_a_claim_in_another_process_binds_its_env_and_the_pool_keeps_no_value(pool_home: Path) -> None:
    definition = ComputeConfig(env={"TOKEN": "the-pool-value"})
    _portal.call(fill, DockerCompute(), definition, 1)
    (waiting,) = warm_rows(pool_home)
    r = run_child(_CREATE, "the-claimer-value", home=pool_home)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == [waiting, "the-claimer-value"]
    # read by another process: closing a file of the ledger here would drop this process's sqlite
    # locks on it (POSIX locks are per process), which can damage it
    files = [str(p) for p in pool_home.glob("ledger.sqlite3*")]
    stored = subprocess.run(["cat", *files], capture_output=True, check=True).stdout
    assert b"the-pool-value" not in stored and b"the-claimer-value" not in stored


def test_a_different_definition_is_not_claimed(pool_home: Path) -> None:
    provider = DockerCompute()
    _portal.call(fill, provider, ComputeConfig(), 1)
    (waiting,) = warm_rows(pool_home)
    others = (ComputeConfig(env={"TOKEN": "x"}), ComputeConfig(cpu=0.5), ComputeConfig(labels={"a": "b"}))
    for other in others:
        assert _portal.call(claim, provider, other) is None
    assert _portal.call(claim, DockerCompute(runtime="runc"), ComputeConfig()) is None  # other options
    assert warm_rows(pool_home) == [waiting]


def test_a_dead_warm_instance_is_skipped_and_forgotten(pool_home: Path) -> None:
    provider = DockerCompute()
    _portal.call(fill, provider, ComputeConfig(), 2)
    first, second = warm_rows(pool_home)
    subprocess.run(["docker", "rm", "-f", container_name(first)], capture_output=True, check=True)
    info = _portal.call(claim, provider, ComputeConfig())
    assert info is not None and info.instance_id == second
    assert Ledger(pool_home / "ledger.sqlite3").get(first) is None
    assert _portal.call(provider.execute, second, "echo alive").stdout == "alive\n"
    _portal.call(provider.shutdown, second)


def test_a_warm_instance_past_its_idle_limit_is_left_to_its_watchdog(pool_home: Path) -> None:
    provider, definition = DockerCompute(), ComputeConfig(idle_timeout_s=3)
    _portal.call(fill, provider, definition, 1)
    (waiting,) = warm_rows(pool_home)
    time.sleep(3)
    assert _portal.call(claim, provider, definition) is None  # its time is up: its watchdog's now
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        listing = ["docker", "ps", "-aq", "--filter", f"name=^{container_name(waiting)}$"]
        found = subprocess.run(listing, capture_output=True, text=True, check=True).stdout
        if not found.strip():
            return
        time.sleep(0.5)
    raise AssertionError(f"the watchdog of {waiting} did not stop it at its idle limit")


def test_a_shared_warm_pool_of_the_library_leaves_its_instances_to_the_home(pool_home: Path) -> None:
    """``WarmPool(..., shared=True)``: filled on entry and recorded warm, claimed with the
    claimer's env; what nobody claimed stays warm after ``close`` for other processes, until
    ``retire`` ends the pool (its refill under way waited for, no refill after)."""
    pool = WarmPool("docker", {"env": {"TOKEN": "unused"}}, size=1, shared=True)

    async def use() -> tuple[str, str]:
        async with pool:
            assert pool.ready == 1
            info = await pool.claim(env={"TOKEN": "claimed"})  # starts a refill
            result = await pool.provider.execute(info.instance_id, "echo $TOKEN")
            await pool.provider.shutdown(info.instance_id)
        return info.instance_id, result.stdout

    claimed, said = _portal.call(use)
    assert said == "claimed\n" and claimed not in warm_rows(pool_home)
    wait_for_refills(pool_home)
    assert len(warm_rows(pool_home)) == 1  # refilled, and left by close() for other processes
    assert _portal.call(pool.retire) == 1
    wait_for_refills(pool_home)
    assert warm_rows(pool_home) == [] and remove_leftovers(pool_home, set()) == {}
