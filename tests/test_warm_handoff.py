"""The warm-pool handoff key, attacked from a second process of the same home (real docker, real
processes): once an instance is claimed, its key is gone from the ledger and a key read earlier
is refused, in one sentence, while the owner's command runs on undisturbed; two claims of one warm
row give it to one of them; and an owner whose main channel is displaced anyway (a second attach
to the container) is told that its command may have run, never handed a made-up ``exit 137``."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from kit import wait_for_refills, warm_rows
from leftovers import child_env, remove_leftovers

from praisonai import _ledger, _portal
from praisonai._errors import ChannelClosedError
from praisonai._ledger import Ledger
from praisonai._types import ExecResult
from praisonai.compute.config import ComputeConfig
from praisonai.compute.providers.docker import DockerCompute, container_name
from praisonai.compute.providers.docker._attach import attach_unix, local_socket
from praisonai.compute.warm import _rows, claim, fill

# The attacker: a process of the same home. It reads what the ledger holds about every instance
# while the pool is warm (any process of the home may claim, so it may read) and adopts each
# instance with it, waits for the go, reads the ledger again and adopts each instance with the
# freshest key it has, then runs a command through the adopted main channel. It prints what it
# read and what happened.
_ATTACKER = """
import json, sys, time, anyio
from pathlib import Path
from praisonai._ledger import Ledger
from praisonai.compute.providers.docker import DockerCompute

folder = Path(sys.argv[1])
def held():
    return dict(Ledger.default().execute("SELECT instance_id, handoff FROM instances"))
before, provider, out = held(), DockerCompute(), {}
for instance_id, key in before.items():  # before anybody claimed it
    try:
        provider.adopt(instance_id, key)
    except Exception as exc:
        out["early"] = f"{type(exc).__name__}: {exc}"
(folder / "ready").touch()
while not (folder / "go").exists():
    time.sleep(0.001)
out["after"] = after = held()
for instance_id, key in before.items():
    try:
        provider.adopt(instance_id, after.get(instance_id) or key)
        out["ran"] = anyio.run(provider.execute, instance_id, "echo attacker").stdout
    except Exception as exc:
        out["refused"] = f"{type(exc).__name__}: {exc}"
print(json.dumps(out))
"""

_OWNER_COMMAND = "touch /tmp/owner-started; sleep 2; echo done"


async def _running(provider: DockerCompute, instance_id: str) -> None:
    """Until the owner's command runs (asked beside it, on the same channel)."""
    with anyio.fail_after(30):
        while (await provider.execute(instance_id, "test -e /tmp/owner-started")).exit_code != 0:
            await anyio.sleep(0.05)


@pytest.fixture
def pool_home(home: Path, docker_ok: None) -> Iterator[Path]:
    """This test's home; afterwards its refills are waited for and everything it made removed."""
    yield home
    wait_for_refills(home)
    remove_leftovers(home, set())


def _await_file(path: Path, child: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while not path.exists():
        assert child.poll() is None, child.communicate()
        assert time.monotonic() < deadline, f"{path} did not appear"
        time.sleep(0.01)


def test_a_second_process_of_the_home_cannot_adopt_a_claimed_instance(
    pool_home: Path, tmp_path: Path
) -> None:
    provider = DockerCompute()
    _portal.call(fill, provider, ComputeConfig(), 1)
    (waiting,) = warm_rows(pool_home)
    env = child_env(pool_home)
    attacker = subprocess.Popen(
        [sys.executable, "-c", _ATTACKER, str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=env,
    )  # fmt: skip
    try:
        _await_file(tmp_path / "ready", attacker)  # it holds the key the warm row offered

        async def own() -> tuple[ExecResult, str]:
            info = await claim(provider, ComputeConfig())
            assert info is not None and info.instance_id == waiting
            async with anyio.create_task_group() as tasks:
                results: list[ExecResult] = []

                async def run() -> None:
                    results.append(await provider.execute(waiting, _OWNER_COMMAND))

                tasks.start_soon(run)
                await _running(provider, waiting)  # on the main channel the owner adopted
                (tmp_path / "go").touch()
                out, err = await anyio.to_thread.run_sync(lambda: attacker.communicate(timeout=60))
            assert attacker.returncode == 0, err
            return results[0], out

        result, said = _portal.call(own)
    finally:
        attacker.kill()
        attacker.wait()
        _portal.call(provider.shutdown, waiting)
    seen = json.loads(said)
    refused = (
        f"ConfigError: the handoff key of docker instance {waiting} is used: another process "
        "claimed the instance and owns its main channel; claim a warm instance of your own"
    )
    unclaimed = (
        f"ConfigError: docker instance {waiting} waits in a warm pool, claimed by nobody: claim it "
        "(Sandbox.create, or praisonai.compute.warm.claim) instead of adopting it"
    )
    # all at once, so that a failure shows every part of the attack that worked
    got = (seen.get("early"), seen["after"][waiting], seen.get("ran"), seen.get("refused"))
    assert (*got, result.exit_code, result.stdout) == (unclaimed, None, None, refused, 0, "done\n"), (
        "the key outlived the claim, or the attacker was let in, or the owner's command was disturbed"
    )


def test_the_ledger_keeps_the_key_from_group_and_other(pool_home: Path) -> None:
    _portal.call(fill, DockerCompute(), ComputeConfig(), 1)
    (waiting,) = warm_rows(pool_home)
    assert stat.S_IMODE(pool_home.stat().st_mode) == 0o700
    for path in pool_home.glob("ledger.sqlite3*"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    _portal.call(DockerCompute().shutdown, waiting)


class _ReadsMeet:
    """A ledger connection whose reads of warm rows wait (a moment at most) until the other
    claimer has read too: the interleaving that hands one row to both claimers, unless the claim
    holds the write lock from its read to its write, made certain instead of left to luck."""

    def __init__(self, db: sqlite3.Connection, meet: threading.Barrier) -> None:
        self._db, self._meet = db, meet

    def execute(self, sql: str, params: Any = ()) -> Any:
        cursor = self._db.execute(sql, params)
        if not sql.lstrip().upper().startswith("SELECT") or "state = 'warm'" not in sql:
            return cursor
        rows = cursor.fetchall()
        with contextlib.suppress(threading.BrokenBarrierError):  # the other waits for the lock
            self._meet.wait()
        return _Fetched(rows)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._db, name)


class _Fetched:
    def __init__(self, rows: list[Any]) -> None:
        self.rows = rows

    def fetchall(self) -> list[Any]:
        return self.rows


def test_two_racing_claims_of_one_warm_row_give_it_to_exactly_one(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ledger alone (no container): two threads, each with its connection, claim the one warm
    row, each reading it before the other writes if the claim lets them; one gets it with its
    key, the other nothing, and the key is gone from the ledger."""
    ledger, pool = Ledger(home / "ledger.sqlite3"), _rows.Pool("docker", "{}", "d" * 16)
    now = time.time()
    ledger.record("docker-race", "docker", {}, "filler", now)
    ledger.mark("docker-race", "running")
    assert _rows.make_warm(ledger, "docker-race", pool, "the-key")
    meet, opened = threading.Barrier(2, timeout=0.5), _ledger._connection
    monkeypatch.setattr(_ledger, "_connection", lambda path: _ReadsMeet(opened(path), meet))
    got: list[_rows.Claimed | None] = []

    def claimer(owner: str) -> None:
        got.append(_rows.claim(ledger, pool, owner, now))

    threads = [threading.Thread(target=claimer, args=(f"claimer-{i}",)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    winners = [claimed for claimed in got if claimed is not None]
    assert len(winners) == 1 and winners[0].handoff == "the-key", got
    assert ledger.execute("SELECT handoff, state FROM instances") == [(None, "running")]


def test_the_warm_rows_taken_to_retire_a_pool_keep_no_key(home: Path) -> None:
    ledger, pool = Ledger(home / "ledger.sqlite3"), _rows.Pool("docker", "{}", "d" * 16)
    ledger.record("docker-retired", "docker", {}, "filler", time.time())
    ledger.mark("docker-retired", "running")
    assert _rows.make_warm(ledger, "docker-retired", pool, "the-key")
    assert _rows.take_all(ledger, pool, "retirer") == ["docker-retired"]
    assert ledger.execute("SELECT handoff, owner FROM instances") == [(None, "retirer")]


def test_an_owner_whose_main_channel_is_displaced_is_told_its_command_may_have_run(pool_home: Path) -> None:
    """Whatever attaches to the container a second time ends the main helper when it lets go
    (the engine closes the stdin of a ``StdinOnce`` container): the owner's command in flight is
    then of unknown fate, which the owner must be told, not given ``exit 137`` and no output."""
    provider = DockerCompute()
    socket_path = local_socket(None)
    if socket_path is None:
        pytest.skip("the engine is not on a local unix socket")
    _portal.call(fill, provider, ComputeConfig(), 1)
    (waiting,) = warm_rows(pool_home)

    async def own() -> ExecResult | BaseException:
        info = await claim(provider, ComputeConfig())
        assert info is not None
        outcome: list[ExecResult | BaseException] = []

        async def run() -> None:
            try:
                outcome.append(await provider.execute(waiting, _OWNER_COMMAND))
            except Exception as exc:
                outcome.append(exc)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(run)
            await _running(provider, waiting)
            sock, _ = attach_unix(
                socket_path, container_name(waiting), 10
            )  # an attach, as docker attach does
            sock.close()
        return outcome[0]

    try:
        got = _portal.call(own)
    finally:
        _portal.call(provider.shutdown, waiting)
    assert isinstance(got, ChannelClosedError), f"the owner was handed {got!r}"
    assert got.sent and "may have run" in str(got)


def test_the_home_is_made_owner_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from praisonai._home import praisonai_home

    monkeypatch.setenv("PRAISONAI_HOME", str(tmp_path / "new" / "home"))
    assert stat.S_IMODE(praisonai_home().stat().st_mode) == 0o700
    assert os.access(praisonai_home(), os.W_OK)
