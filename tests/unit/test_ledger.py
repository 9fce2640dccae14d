"""The instance ledger: its contract, concurrent writers, and the provider hooks that fill it."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

import praisonai
from praisonai._errors import HomeUnusableError, ProviderUnavailableError, ProvisionError
from praisonai._ledger import Ledger, LedgerEntry
from praisonai.compute.config import ComputeConfig
from praisonai.compute.lifecycle import owner_tag
from praisonai.compute.providers.docker import DEFAULT_IMAGE, DockerCompute
from praisonai.compute.providers.local import LocalCompute
from praisonai.compute.registry import provider_for_record

_REPO = Path(praisonai.__file__).parents[1]  # for children whose env is clean (no PYTHONPATH)


def test_record_get_mark_touch_forget(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.sqlite3")
    ledger.record("local_1", "local", {"root": "/r", "isolate": True}, "me@host:1", 100.0)
    assert ledger.get("local_1") == LedgerEntry(
        "local_1", "local", {"isolate": True, "root": "/r"}, "me@host:1", 100.0, "provisioning", 100.0
    )
    ledger.mark("local_1", "running")
    ledger.touch("local_1")
    entry = ledger.get("local_1")
    assert entry is not None and entry.state == "running" and entry.last_active > 100.0
    ledger.forget("local_1")
    ledger.forget("local_1")  # idempotent
    assert ledger.get("local_1") is None and ledger.entries() == []


def test_mark_never_revives_a_forgotten_row_and_entries_are_oldest_first(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.sqlite3")
    ledger.mark("ghost", "running")
    ledger.record("b", "local", {}, "o", 2.0)
    ledger.record("a", "local", {}, "o", 1.0)
    assert [e.instance_id for e in ledger.entries()] == ["a", "b"]
    assert ledger.get("ghost") is None


def test_the_file_is_owner_only(tmp_path: Path) -> None:
    Ledger(tmp_path / "ledger.sqlite3").entries()
    assert (tmp_path / "ledger.sqlite3").stat().st_mode & 0o777 == 0o600


def test_a_spec_that_is_not_json_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TypeError):
        Ledger(tmp_path / "ledger.sqlite3").record("x", "local", {"root": Path("/r")}, "o", 1.0)


_WRITER = """
import sys, time
from praisonai._ledger import Ledger
ledger = Ledger(sys.argv[1])
time.sleep(max(0.0, float(sys.argv[3]) - time.time()))  # all start together, racing to create it
for i in range(50):
    ledger.record(f"{sys.argv[2]}_{i}", "local", {"n": i}, "w", time.time())
    ledger.mark(f"{sys.argv[2]}_{i}", "running")
"""


def test_concurrent_processes_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    start = str(time.time() + 3)  # after every interpreter has started
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(_WRITER), str(path), f"w{n}", start],
            stderr=subprocess.PIPE,
        )
        for n in range(4)
    ]
    errors = [w.communicate(timeout=120)[1].decode() for w in writers]
    assert [w.returncode for w in writers] == [0] * 4, errors
    entries = Ledger(path).entries()
    assert len(entries) == 200 and {e.state for e in entries} == {"running"}


def test_concurrent_threads_lose_nothing(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.sqlite3")

    def write(n: int) -> None:
        for i in range(25):
            ledger.record(f"t{n}_{i}", "local", {}, "t", 1.0)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(ledger.entries()) == 200


def test_owner_alive() -> None:
    def entry(owner: str) -> LedgerEntry:
        return LedgerEntry("i", "local", {}, owner, 0.0, "provisioning", 0.0)

    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    assert entry(owner_tag()).owner_alive() is True
    assert entry(owner_tag().rpartition(":")[0] + ":" + dead.stdout.strip()).owner_alive() is False
    assert entry("me@elsewhere.invalid:1").owner_alive() is None


# ---- the provider hooks ---------------------------------------------------------------------


def test_the_recorded_options_hold_only_what_differs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PRAISONAI_DOCKER_IMAGE", raising=False)
    assert LocalCompute().options.to_record() == {"type": "local"}
    assert LocalCompute(root=tmp_path, isolate=True).options.to_record() == {
        "type": "local",
        "root": str(tmp_path),
        "isolate": True,
    }
    assert DockerCompute().options.to_record() == {"type": "docker"}
    assert DockerCompute(image=DEFAULT_IMAGE).options.to_record() == {"type": "docker"}
    options = DockerCompute(image="python:3.12", base_url="tcp://10.0.0.1:2375").options
    spec = options.to_record()
    assert spec == {"type": "docker", "base_url": "tcp://10.0.0.1:2375", "image": "python:3.12"}
    assert provider_for_record("docker", spec).options == options  # round-trips


def test_provision_records_then_marks_running_and_shutdown_forgets(home: Path) -> None:
    provider = LocalCompute(root=home / "elsewhere")
    ledger = Ledger.default()

    async def main() -> None:
        info = await provider.provision()
        entry = ledger.get(info.instance_id)
        assert entry is not None
        assert (entry.provider, entry.spec, entry.state) == (
            "local",
            {"type": "local", "root": str(home / "elsewhere")},
            "running",
        )
        assert entry.owner == owner_tag()
        assert await provider.shutdown(info.instance_id) is True
        assert ledger.get(info.instance_id) is None

    anyio.run(main)


def test_a_failed_provision_leaves_no_row(home: Path) -> None:
    async def main() -> None:
        with pytest.raises(ProvisionError):
            await LocalCompute().provision({"setup": ["exit 3"]})

    anyio.run(main)
    assert Ledger.default().entries() == []
    assert list((home / "local").iterdir()) == []


def test_shutdown_of_an_unknown_instance_forgets_its_row(home: Path) -> None:
    ledger = Ledger.default()
    ledger.record("local_000000000000", "local", {}, owner_tag(), 1.0)
    assert anyio.run(LocalCompute().shutdown, "local_000000000000") is False
    assert ledger.entries() == []


def test_the_row_exists_while_setup_runs(home: Path) -> None:
    """Recorded before creation, "provisioning" until setup is done: seen from another process."""
    code = "from praisonai._ledger import Ledger; print([e.state for e in Ledger.default().entries()])"
    probe = f"PYTHONPATH={_REPO} PRAISONAI_HOME={home} {sys.executable} -c '{code}' > {home}/seen"

    async def main() -> None:
        provider = LocalCompute()
        info = await provider.provision({"setup": [probe]})
        await provider.shutdown(info.instance_id)

    anyio.run(main)
    assert (home / "seen").read_text().strip() == "['provisioning']"


# ---- damage: the file, a row, a provision that cannot clean up -------------------------------


def test_a_damaged_file_is_refused_named_and_left_exactly_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    path.write_bytes(os.urandom(4096))
    before = path.read_bytes()
    with pytest.raises(HomeUnusableError, match=r"is damaged \(file is not a database\)") as caught:
        Ledger(path).entries()
    assert f"the ledger {path} is damaged" in str(caught.value) and f"mv {path} " in str(caught.value)
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["ledger.sqlite3"]


def test_unreadable_rows_are_skipped_and_each_reported_with_how_to_remove_it(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.sqlite3")
    for n in range(5):
        ledger.record(f"local_00000000000{n}", "local", {}, "o", float(n))
    with sqlite3.connect(ledger.path) as db:
        db.execute("UPDATE instances SET spec = '{not json' WHERE instance_id = 'local_000000000001'")
        db.execute("UPDATE instances SET spec = '[1]' WHERE instance_id = 'local_000000000002'")
        db.execute("UPDATE instances SET created_at = 'soon' WHERE instance_id = 'local_000000000003'")
    entries, problems = ledger.scan()
    assert [e.instance_id for e in entries] == ["local_000000000000", "local_000000000004"]
    assert [p.split(":", 1)[0] for p in problems] == [
        f"skipped row {n} ('local_00000000000{n - 1}') of the ledger {ledger.path}" for n in (2, 3, 4)
    ]
    assert "its spec is not JSON" in problems[0] and "not a JSON object" in problems[1]
    assert "created_at is not a number" in problems[2]
    assert problems[0].endswith(f"remove it: sqlite3 {ledger.path} 'DELETE FROM instances WHERE rowid = 2'")
    assert ledger.entries() == entries and ledger.get("local_000000000001") is None
    flagged = ledger.scan(lambda e: "no" if e.instance_id.endswith("4") else None)
    assert [e.instance_id for e in flagged[0]] == ["local_000000000000"] and len(flagged[1]) == 4


class _EngineGone(LocalCompute):
    """Creation fails as an engine that stops answering would, and so does removal."""

    async def _create(self, instance_id: str, cfg: Any, labels: dict[str, str]) -> Any:
        raise ProviderUnavailableError("the engine does not answer", op="provision")

    async def _destroy(self, instance_id: str) -> bool:
        raise ProviderUnavailableError("still no answer", op="shutdown")


def test_a_provision_that_cannot_clean_up_marks_its_row_failed_and_raises_its_own_error(home: Path) -> None:
    never_reaped = ComputeConfig(auto_shutdown=False)  # no home reaper left to watch its row
    with pytest.raises(ProviderUnavailableError, match="the engine does not answer"):
        anyio.run(_EngineGone().provision, never_reaped)
    (entry,) = Ledger.default().entries()
    assert entry.state == "failed" and entry.abandoned()


def test_abandoned_means_a_provision_that_ended_without_handing_out(home: Path) -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    dead_owner = f"{owner_tag().rpartition(':')[0]}:{dead.stdout.strip()}"

    def entry(state: str, owner: str) -> LedgerEntry:
        return LedgerEntry("local_000000000000", "local", {}, owner, 0.0, state, 0.0)

    assert entry("failed", owner_tag()).abandoned() and entry("provisioning", dead_owner).abandoned()
    assert not entry("provisioning", owner_tag()).abandoned()  # still being made
    assert not entry("provisioning", "me@elsewhere.invalid:1").abandoned()  # not ours to judge
    assert not entry("running", dead_owner).abandoned()  # handed out: gc's idle rules decide


def test_the_ledger_in_an_unusable_home_is_one_sentence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("PRAISONAI_HOME", str(tmp_path / "file" / "home"))
    with pytest.raises(
        HomeUnusableError, match=r"cannot be used \(not a directory\); set PRAISONAI_HOME to a"
    ):
        Ledger.default()
