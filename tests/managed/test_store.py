"""The sqlite session store: the conformance suite, then what only real processes and real files
show — two processes racing for one lease, a SIGKILLed owner, a damaged or newer file, a long log."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from praisonai._errors import HomeUnusableError, SessionBusyError, StaleSessionError
from praisonai.compute.lifecycle import owner_tag
from praisonai.managed.events import Event, text_content
from praisonai.managed.store import SqliteSessionStore
from praisonai.managed.testing import CHECKS, CONFIG, REMOTE_CHECKS

# A child that opens the store at argv[1], waits for "go" on stdin, acquires session argv[2] as
# itself (its own pid in the owner tag), prints what happened, and stays alive until stdin closes:
# its lease must not look dead while the other child tries.
RACER = """
import sys
from praisonai._errors import SessionBusyError
from praisonai.compute.lifecycle import owner_tag
from praisonai.managed.store import SqliteSessionStore
store = SqliteSessionStore(sys.argv[1])
print("ready", flush=True)
sys.stdin.readline()
try:
    lease = store.acquire(sys.argv[2], owner_tag())
    print("won", lease.epoch, flush=True)
except SessionBusyError:
    print("busy", flush=True)
sys.stdin.read()
"""


@pytest.mark.parametrize("name", CHECKS)
def test_conformance(name: str, tmp_path: Path) -> None:
    CHECKS[name](lambda: SqliteSessionStore(tmp_path / "store.db"))


@pytest.mark.parametrize("name", REMOTE_CHECKS)
def test_remote_cache_conformance(name: str, tmp_path: Path) -> None:
    REMOTE_CHECKS[name](lambda: SqliteSessionStore(tmp_path / "store.db"))


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteSessionStore]:
    with SqliteSessionStore(tmp_path / "store.db") as opened:
        yield opened


def _child(*argv: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", *argv],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def test_two_processes_racing_for_a_lease_one_wins_the_other_is_busy(store: SqliteSessionStore) -> None:
    record, lease = store.create_session(store.upsert_agent("local", "coder", CONFIG), owner_tag())
    store.release(lease)
    racers = [_child(RACER, str(store.path), record.id) for _ in range(2)]
    try:
        for racer in racers:
            assert racer.stdout is not None and racer.stdout.readline() == "ready\n"
        for racer in racers:
            assert racer.stdin is not None
            racer.stdin.write("go\n")
            racer.stdin.flush()
        outcomes = sorted(racer.stdout.readline().split()[0] for racer in racers if racer.stdout)
        assert outcomes == ["busy", "won"]
        after = store.get_session(record.id)
        assert after.lease_epoch == lease.epoch + 1 and after.lease_owner != owner_tag()
    finally:
        for racer in racers:
            racer.kill()
            racer.communicate()


def test_the_lease_of_a_sigkilled_owner_is_taken_at_once_without_force(store: SqliteSessionStore) -> None:
    holder = _child(
        "import sys, time\n"
        "from praisonai.compute.lifecycle import owner_tag\n"
        "from praisonai.managed.store import SqliteSessionStore\n"
        "s = SqliteSessionStore(sys.argv[1])\n"
        "record, lease = s.create_session(s.upsert_agent('local', 'coder', {}), owner_tag(), ttl_s=3600)\n"
        "print(record.id, lease.epoch, flush=True)\n"
        "time.sleep(600)\n",
        str(store.path),
    )
    try:
        assert holder.stdout is not None
        session_id, epoch = holder.stdout.readline().split()
        with pytest.raises(SessionBusyError, match=f":{holder.pid}"):  # alive: busy
            store.acquire(session_id, owner_tag())
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
    finally:
        holder.kill()
        holder.communicate()
    lease = store.acquire(session_id, owner_tag())  # its lease runs an hour more, but its owner is dead
    assert lease.epoch == int(epoch) + 1
    assert store.append(lease, [Event("user.message", {"content": text_content("hi")})], turn=1) == 1


def test_a_damaged_file_is_refused_in_one_sentence_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    garbage = b"this is not a database, it is a note\n" * 200
    path.write_bytes(garbage)
    with pytest.raises(HomeUnusableError) as caught:
        SqliteSessionStore(path)
    message = str(caught.value)
    assert str(path) in message and "\n" not in message and "move it aside" in message
    assert path.read_bytes() == garbage


def test_a_file_of_a_newer_schema_or_of_someone_else_is_refused(tmp_path: Path) -> None:
    newer = tmp_path / "newer.db"
    SqliteSessionStore(newer).close()
    with sqlite3.connect(newer) as db:
        db.execute("UPDATE schema_meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(HomeUnusableError, match="newer praisonai"):
        SqliteSessionStore(newer)
    foreign = tmp_path / "foreign.db"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE notes (text TEXT)")
    with pytest.raises(HomeUnusableError, match="not a praisonai session store"):
        SqliteSessionStore(foreign)
    with sqlite3.connect(foreign) as db:
        assert [row[0] for row in db.execute("SELECT name FROM sqlite_master")] == ["notes"]


def test_a_version_1_file_is_migrated_in_place_and_keeps_its_sessions(tmp_path: Path) -> None:
    path = tmp_path / "v1.db"
    with SqliteSessionStore(path) as store:  # made at version 2, then taken back to what 1 had
        agent = store.upsert_agent("local", "a", CONFIG)
        record, lease = store.create_session(agent, owner_tag(), title="kept")
        store.append(lease, [Event("user.message", {"content": text_content("hi")})], turn=1)
    with sqlite3.connect(path) as db:
        db.execute("DROP TABLE remote_resources")
        db.execute("DROP INDEX sessions_by_remote")
        db.execute("ALTER TABLE sessions DROP COLUMN remote_json")
        db.execute("UPDATE schema_meta SET value = '1' WHERE key = 'schema_version'")
    with SqliteSessionStore(path) as store:
        again = store.get_session(record.id)
        assert (again.title, again.remote, again.last_seq) == ("kept", None, 1)
        assert store.list_remote_resources("anthropic") == []
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT value FROM schema_meta").fetchone() == ("3",)


def test_the_default_file_lives_in_the_home_and_an_unusable_home_is_one_sentence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PRAISONAI_HOME", str(tmp_path / "home"))
    with SqliteSessionStore() as store:
        assert store.path == tmp_path / "home" / "managed" / "store.db" and store.path.is_file()
    (tmp_path / "file").write_text("not a folder")
    monkeypatch.setenv("PRAISONAI_HOME", str(tmp_path / "file"))
    with pytest.raises(HomeUnusableError, match="PRAISONAI_HOME"):
        SqliteSessionStore()


def test_a_long_log_reads_back_in_order(store: SqliteSessionStore) -> None:
    _, lease = store.create_session(store.upsert_agent("local", "coder", CONFIG), owner_tag())
    sent = [Event("agent.message", {"content": text_content(f"message {i}")}) for i in range(500)]
    for start in range(0, 500, 50):
        store.append(lease, sent[start : start + 50], turn=start // 50 + 1)
    log = store.events(lease.session_id)
    assert [e.event for e in log] == sent and [e.seq for e in log] == list(range(1, 501))
    assert [e.turn for e in log[48:52]] == [1, 1, 2, 2]
    paged = [
        e for after in range(0, 500, 120) for e in store.events(lease.session_id, after_seq=after, limit=120)
    ]
    assert paged == log


def test_a_forked_child_writes_through_its_own_connection(store: SqliteSessionStore) -> None:
    """A store object inherited across fork() must not share the parent's sqlite connection."""
    record, lease = store.create_session(store.upsert_agent("local", "coder", CONFIG), owner_tag())
    pid = os.fork()
    if pid == 0:  # the child: take the lease over and write once, then leave at once
        code = 1
        try:
            taken = store.acquire(record.id, "child@elsewhere.invalid:1", force=True)
            store.append(taken, [Event("user.message", {"content": text_content("from the child")})], turn=1)
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert [e.event.text for e in store.events(record.id)] == ["from the child"]
    with pytest.raises(StaleSessionError, match=r"child@elsewhere\.invalid:1 took it over"):
        store.update(lease, status="running")
