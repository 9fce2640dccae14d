"""The session store and the ``praisonai managed`` commands under faults: a stored row they cannot
read, stored text that would drive a terminal, another application's sqlite file, a writer that
holds the lock. Real sqlite files, the real command in a child process, the scripted model.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from kit import managed_cli

from praisonai._errors import HomeUnusableError
from praisonai.llm.testing import API_KEY, ScriptedLLM, reply, tool
from praisonai.managed.events import Event, text_content
from praisonai.managed.live._history import result_event
from praisonai.managed.store import SqliteSessionStore

#: What must never reach a terminal from stored text: ESC, BEL, CSI (C1), a bidi override.
UNSAFE = ("\x1b", "\x07", "\x9b", "\u202e")
HOSTILE = "t\x1b]0;pwned\x07i\x1b[2Jt\x9b31m\u202ele"


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        server.set_script([reply("never asked")])
        yield server


def managed(home: Path, llm: ScriptedLLM, *args: str) -> subprocess.CompletedProcess[str]:
    return managed_cli(home, llm.url, *args)


def stored_session(title: str | None = None, *events: Event, status: str = "idle") -> str:
    """A local session made through the store's API (no CLI check in the way), holding ``events``."""
    with SqliteSessionStore() as store:
        agent = store.upsert_agent("local", "agent", {"schema": 1, "model": "gpt-4o-mini"})
        record, lease = store.create_session(agent, "someone@elsewhere:1", title=title)
        store.update(lease, events=events, turn=1, status=status, turns=1)
        store.release(lease)
        return record.id


def test_stored_escape_sequences_are_shown_harmless_by_list_and_show(home: Path, llm: ScriptedLLM) -> None:
    use = Event("agent.tool_use", {"name": "execute_command", "input": {"command": HOSTILE}, "call_id": "c1"})
    said = Event("agent.message", {"content": text_content(HOSTILE)})
    session_id = stored_session(HOSTILE, Event("user.message", {"content": text_content(HOSTILE)}),
                                said, use, result_event(use, HOSTILE, is_error=False))  # fmt: skip
    for args in (("sessions", "list"), ("sessions", "show", session_id, "--events")):
        r = managed(home, llm, *args)
        assert r.returncode == 0, r.stderr
        assert "pwned" in r.stdout, r.stdout  # the text is shown, its controls are not
        assert not [c for c in UNSAFE if c in r.stdout + r.stderr], repr(r.stdout)


def test_a_malformed_row_is_skipped_and_named_and_the_others_listed(home: Path, llm: ScriptedLLM) -> None:
    good, bad = stored_session("good"), stored_session("bad")
    with sqlite3.connect(home / "managed" / "store.db") as db:
        db.execute("UPDATE sessions SET metadata_json = '{not json' WHERE id = ?", (bad,))
    r = managed(home, llm, "sessions", "list")
    assert r.returncode == 0, r.stderr
    assert good in r.stdout and bad not in r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and bad in lines[0] and "skipped" in lines[0] and "Traceback" not in r.stderr


def test_an_undecodable_stored_prompt_is_said_and_the_session_is_not_left_running(
    home: Path, llm: ScriptedLLM
) -> None:
    """An older praisonai stored ``managed run $'hi \\xff'``: resume and show say so in one
    sentence, no model request is made, and the session ends ``error``, not ``running``."""
    session_id = stored_session(None, Event("user.message", {"content": text_content("hi \udcff")}),
                                status="running")  # fmt: skip
    for args in (("sessions", "resume", session_id, "again"), ("sessions", "show", session_id, "--events")):
        r = managed(home, llm, *args)
        assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
        assert "not valid UTF-8" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert llm.requests == []
    with SqliteSessionStore() as store:
        record = store.get_session(session_id)
    assert record.status == "error" and "not valid UTF-8" in str(record.last_error)


def test_a_foreign_sqlite_file_is_refused_unchanged(home: Path, tmp_path: Path) -> None:
    foreign = tmp_path / "other-app.db"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE notes (body TEXT)")
        db.execute("INSERT INTO notes VALUES ('mine')")
    db.close()
    before = foreign.read_bytes()
    with pytest.raises(HomeUnusableError, match="not a praisonai session store"):
        SqliteSessionStore(foreign)
    assert foreign.read_bytes() == before, "the foreign file was changed"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other-app.db"], "a -wal or -shm file was made"
    with sqlite3.connect(foreign) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    db.close()


HOLD = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
db.execute("UPDATE sessions SET turns = turns + 1")
print("holding", flush=True)
sys.stdin.readline()
db.execute("ROLLBACK")
"""


def test_readers_do_not_wait_behind_a_writer(home: Path, llm: ScriptedLLM) -> None:
    session_id = stored_session("read me")
    writer = subprocess.Popen([sys.executable, "-c", HOLD, str(home / "managed" / "store.db")],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert writer.stdout is not None and writer.stdout.readline() == "holding\n"
        for args in (("sessions", "list"), ("sessions", "show", session_id)):
            r = managed(home, llm, *args)
            assert r.returncode == 0 and "read me" in r.stdout, r.stderr
    finally:
        writer.communicate("\n", timeout=30)


def test_a_turn_that_fails_unexpectedly_ends_in_error_not_running(home: Path, llm: ScriptedLLM) -> None:
    """Any exception out of a turn (here: the confirmation callback's own bug) is recorded: the
    session ends ``error`` with the reason, and stays resumable, never ``running`` forever."""
    from praisonai.managed import ManagedAgent

    def broken(_request: object) -> str:
        raise RuntimeError("the callback's own bug")

    ask = [
        {"type": "agent_toolset_20260401", "default_config": {"permission_policy": {"type": "always_ask"}}}
    ]
    llm.set_script([reply(tool("execute_command", command="true"))])
    agent = ManagedAgent(compute="local", config={"model": "gpt-4o-mini", "tools": ask, "environment": False},
                         on_tool_confirmation=broken, api_key=API_KEY, base_url=f"{llm.url}/v1")  # fmt: skip
    try:
        with pytest.raises(RuntimeError, match="the callback's own bug"):
            agent.run("go")
        record = agent.retrieve_session()
    finally:
        agent.close()
    assert record is not None and record.status == "error", record
    assert "RuntimeError: the callback's own bug" in str(record.last_error)


def test_bytes_that_are_not_utf8_in_a_row_are_said_not_a_traceback(home: Path, llm: ScriptedLLM) -> None:
    """Another tool wrote bytes that are not UTF-8 into a title and an event: the listing still
    lists (the title shown harmless), show and resume say which event in one sentence."""
    session_id = stored_session("fine", Event("user.message", {"content": text_content("hi")}))
    with sqlite3.connect(home / "managed" / "store.db") as db:
        db.execute("UPDATE sessions SET title = CAST(X'6869ff1b5b324a' AS TEXT) WHERE id = ?", (session_id,))
        db.execute(
            "UPDATE events SET payload_json = CAST(REPLACE(payload_json, '\"hi\"', '\"hi' || X'ff' || '\"')"
            " AS TEXT) WHERE session_id = ?",
            (session_id,),
        )
    db.close()
    listed = managed(home, llm, "sessions", "list")
    assert listed.returncode == 0 and session_id in listed.stdout and "\x1b" not in listed.stdout, listed
    for args in (("sessions", "show", session_id, "--events"), ("sessions", "resume", session_id, "again")):
        r = managed(home, llm, *args)
        assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
        assert f"event 1 of session {session_id}" in r.stderr and "not valid UTF-8" in r.stderr, r.stderr
    assert llm.requests == []
