"""The hosted loop's remote agent and environment live somewhere: an API endpoint and the key's
workspace. ManagedAgent(provider="anthropic") as a PraisonAI user writes it, against the Managed
Agents fake through the real ``anthropic`` client (two fakes are two endpoints / workspaces).

What is checked: a remote agent or environment the API lost is made again once and the session
says so (``praisonai managed sessions show``); another key or endpoint gets its own resources and
leaves the first's alone; a 404 after the re-creation is one sentence, not a loop; rows a store
recorded before scopes keep working; the key is nowhere in the store, the logs or the errors.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from anthropic import Anthropic
from fakes.managed_agents import ManagedAgentsFake, end_turn, say

from praisonai._errors import SessionNotFoundError
from praisonai.managed import ManagedAgent
from praisonai.managed.store import SqliteSessionStore

#: Keys as a user's look (long, random-looking): what must never be stored, logged or shown.
KEY_A = "sk-ant-api03-workspaceA-7Qm2Lr9XvB4nK8sT1wZ6yH3pD5fJ0cG"
KEY_B = "sk-ant-api03-workspaceB-Nx4Rt8Vb2Mq6Ls0Kp9Jw3Hd7Fg1Zc5Y"
SCRIPT = [say("hello there"), end_turn()]
Make = Callable[..., ManagedAgent]


@pytest.fixture
def fake() -> Iterator[ManagedAgentsFake]:
    with ManagedAgentsFake(SCRIPT, require_key=KEY_A) as server:
        yield server


@pytest.fixture
def make(home: Path) -> Iterator[Make]:
    """``make(fake, key)``: a hosted ManagedAgent of one config on that endpoint with that key."""
    made: list[ManagedAgent] = []

    def build(fake: ManagedAgentsFake, key: str = KEY_A, system: str = "be brief") -> ManagedAgent:
        agent = ManagedAgent(provider="anthropic", config={"environment": False, "system": system},
                             api_key=key, base_url=fake.url)  # fmt: skip
        made.append(agent)
        return agent

    yield build
    for agent in made:
        agent.close()


def show(home: Path, session_id: str) -> str:
    """``praisonai managed sessions show SESSION_ID`` as a user runs it (no key needed)."""
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "CLAUDE_API_KEY")}
    child = subprocess.run([sys.executable, "-m", "praisonai", "managed", "sessions", "show", session_id,
                            "--events"], capture_output=True, text=True, timeout=120,
                           env={**env, "PRAISONAI_HOME": str(home)}, stdin=subprocess.DEVNULL)  # fmt: skip
    assert child.returncode == 0, child.stderr
    return child.stdout


def test_a_deleted_remote_agent_is_made_again_once_and_the_session_says_so(
    home: Path, make: Make, fake: ManagedAgentsFake
) -> None:
    assert make(fake).run("hi").stop_reason == "end_turn"
    (old,) = fake.agents()
    fake.delete_agent(old["id"])  # in the Console, say
    second = make(fake)
    result = second.run("hi again")
    assert (result.text, result.stop_reason) == ("hello there", "end_turn")
    (new,) = fake.agents()
    assert new["id"] != old["id"] and len(fake.calls("agents.create")) == 2, "made again, once"
    assert len(fake.environments()) == 1, "the environment was not lost: kept"
    record = second.retrieve_session()
    assert record is not None and record.remote is not None
    assert record.remote["agent"]["id"] == new["id"]
    said = {"kind": "agent", "previous_id": old["id"], "remote_id": new["id"],
            "reason": "the old one was not found"}  # fmt: skip
    assert record.remote["recreated"] == [said]
    events = [s.event for s in second.store.events(record.id) if s.event.type == "remote.recreated"]
    assert [dict(e.data) for e in events] == [said]
    line = f"remote agent re-created: {old['id']} was not found on the API; now {new['id']}"
    assert show(home, record.id).count(line) == 2, "the card and the transcript say it"
    assert make(fake).run("third").stop_reason == "end_turn"
    assert len(fake.calls("agents.create")) == 2, "the new agent is reused from then on"


def test_a_changed_config_of_a_deleted_agent_makes_a_new_agent_instead_of_updating_the_lost_one(
    make: Make, fake: ManagedAgentsFake
) -> None:
    make(fake).run("hi")
    (old,) = fake.agents()
    fake.delete_agent(old["id"])
    changed = make(fake, system="be thorough")
    assert changed.run("hi").stop_reason == "end_turn"
    (new,) = fake.agents()
    assert new["system"] == "be thorough" and new["version"] == 1
    assert len(fake.calls("agents.update")) == 1 and len(fake.calls("sessions.create")) == 2, "no retry loop"
    record = changed.retrieve_session()
    assert record is not None and record.remote is not None
    notes = [(n["previous_id"], n["remote_id"]) for n in record.remote["recreated"]]
    assert notes == [(old["id"], new["id"])]


def test_a_deleted_environment_is_made_again_and_said(make: Make, fake: ManagedAgentsFake) -> None:
    make(fake).run("hi")
    (old,) = fake.environments()
    with Anthropic(base_url=fake.url, api_key=KEY_A, max_retries=0) as client:
        client.beta.environments.delete(old["id"])
    second = make(fake)
    assert second.run("hi").stop_reason == "end_turn"
    (new,) = fake.environments()
    assert new["id"] != old["id"] and new["name"] == old["name"]
    record = second.retrieve_session()
    assert record is not None and record.remote is not None
    assert [(n["kind"], n["previous_id"]) for n in record.remote["recreated"]] == [("environment", old["id"])]
    assert len(fake.agents()) == 1, "the agent was not lost: kept"


def test_another_endpoint_and_key_get_their_own_resources_and_leave_the_first_alone(
    home: Path, make: Make, fake: ManagedAgentsFake
) -> None:
    make(fake).run("hi")
    first = (fake.agents(), fake.environments())
    with ManagedAgentsFake(SCRIPT, require_key=KEY_B) as other:
        assert make(other, KEY_B).run("hi").stop_reason == "end_turn"
        assert len(other.agents()) == 1 and len(other.environments()) == 1, "made there"
        assert (fake.agents(), fake.environments()) == first, "the first workspace's untouched"
        assert len(fake.calls("agents.create")) == 1 and len(fake.calls("sessions.create")) == 1
        make(fake).run("back")  # the first endpoint and key again: their own, reused
        make(other, KEY_B).run("there")
        assert len(fake.calls("agents.create")) == 1 and len(other.calls("agents.create")) == 1
        assert len(fake.session_ids()) == 2 and len(other.session_ids()) == 2
        ids = {fake.agents()[0]["id"], other.agents()[0]["id"]}
    with SqliteSessionStore(home / "managed" / "store.db") as store:
        agents = store.list_remote_resources("anthropic", "agent")
        assert {r.remote_id for r in agents} == ids and len(agents) == 2
        assert len({r.scope for r in agents}) == 2 and len({r.config_hash for r in agents}) == 1


def test_a_new_key_on_the_same_endpoint_finds_its_workspace_resources_instead_of_making_them_twice(
    home: Path, make: Make
) -> None:
    """The fake has one workspace: a second key there is a rotated key of the same workspace."""
    with ManagedAgentsFake(SCRIPT) as shared:
        make(shared, KEY_A).run("hi")
        assert make(shared, KEY_B).run("hi").stop_reason == "end_turn"
        assert len(shared.calls("agents.create")) == 1 and len(shared.calls("environments.create")) == 1
    with SqliteSessionStore(home / "managed" / "store.db") as store:
        rows = store.list_remote_resources("anthropic", "agent")
        assert len(rows) == 2 and rows[0].remote_id == rows[1].remote_id and rows[0].scope != rows[1].scope


def test_a_404_after_the_re_creation_is_one_sentence_and_no_loop(make: Make, fake: ManagedAgentsFake) -> None:
    make(fake).run("hi")
    (old,) = fake.agents()
    fake.delete_agent(old["id"])
    fake.fail(404, on="sessions.create", times=2, message="agent not found")
    second = make(fake)
    with pytest.raises(SessionNotFoundError) as caught:
        second.run("hi")
    message = str(caught.value)
    assert "\n" not in message and "again" in message and "not trying again" in message, message
    (new,) = fake.agents()
    assert new["id"] in message
    assert len(fake.calls("sessions.create")) == 1 + 2 and len(fake.calls("agents.create")) == 2, "once"
    record = second.retrieve_session()
    assert record is not None and record.remote is not None
    assert [n["previous_id"] for n in record.remote["recreated"]] == [old["id"]], "what was done is kept"


def test_a_404_with_nothing_lost_is_the_api_answer_and_nothing_is_made(
    make: Make, fake: ManagedAgentsFake
) -> None:
    make(fake).run("hi")
    fake.fail(404, on="sessions.create", message="no such thing")
    with pytest.raises(SessionNotFoundError, match="no such thing"):
        make(fake).run("hi")
    assert len(fake.calls("agents.create")) == 1 and len(fake.calls("environments.create")) == 1


def test_rows_a_store_recorded_before_scopes_keep_working(
    home: Path, make: Make, fake: ManagedAgentsFake
) -> None:
    make(fake).run("hi")
    path = home / "managed" / "store.db"
    _back_to_version_2(path)
    assert make(fake).run("after the upgrade").stop_reason == "end_turn"
    assert len(fake.calls("agents.create")) == 1, "found on the API again, not made twice"
    with SqliteSessionStore(path) as store:
        rows = store.list_remote_resources("anthropic")
        assert sorted((r.kind, bool(r.scope)) for r in rows) == [
            ("agent", False),
            ("agent", True),
            ("environment", False),
            ("environment", True),
        ], "the old rows are kept (scope unknown), the run recorded its own"
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT value FROM schema_meta").fetchone() == ("3",)


def test_the_key_is_nowhere_in_the_store_the_logs_or_the_errors(
    home: Path, make: Make, fake: ManagedAgentsFake, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    make(fake).run("hi")
    fake.delete_agent(fake.agents()[0]["id"])
    fake.fail(404, on="sessions.create", times=2)
    with pytest.raises(SessionNotFoundError) as caught:
        make(fake).run("hi")
    files = [p for p in home.rglob("*") if p.is_file()]
    assert any(p.name.startswith("store.db") for p in files)
    secret = KEY_A.encode()
    leaked = [str(p) for p in files if secret in p.read_bytes() or secret[-20:] in p.read_bytes()]
    assert not leaked, leaked
    assert KEY_A not in caplog.text and KEY_A[-20:] not in caplog.text
    assert KEY_A[-20:] not in str(caught.value) and KEY_A[-20:] not in repr(caught.value.__cause__)


def _back_to_version_2(path: Path) -> None:
    """The file as a praisonai before scopes left it: remote rows keyed by config alone."""
    with sqlite3.connect(path) as db:
        rows: list[Any] = db.execute(
            "SELECT backend, kind, config_hash, remote_id, version, name, config_json, created_at"
            " FROM remote_resources"
        ).fetchall()
        db.execute("DROP TABLE remote_resources")
        db.execute(
            """CREATE TABLE remote_resources (
            backend TEXT NOT NULL, kind TEXT NOT NULL, config_hash TEXT NOT NULL,
            remote_id TEXT NOT NULL, version INTEGER, name TEXT NOT NULL, config_json TEXT NOT NULL,
            created_at REAL NOT NULL, PRIMARY KEY (backend, kind, config_hash))"""
        )
        db.executemany("INSERT INTO remote_resources VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
        db.execute("UPDATE schema_meta SET value = '2' WHERE key = 'schema_version'")
