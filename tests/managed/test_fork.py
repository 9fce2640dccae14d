"""Forking a managed session (``ManagedAgent.fork_session``, ``praisonai managed sessions fork``):
on docker and local instances for real, the model a scripted server. A fork at turn 2 of 3 and
the original both resume, each on its own files; the original's log and instance are
byte-identical after the fork; bad input is one sentence with nothing made; deleting the sessions
(in either order) leaves no snapshot and no instance."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from praisonai import _portal
from praisonai._errors import ConfigError, SessionBusyError, SessionNotFoundError, UnsupportedFeatureError
from praisonai._ledger import Ledger
from praisonai.compute import snapshots
from praisonai.compute.lifecycle import owner_tag
from praisonai.llm.testing import API_KEY, ScriptedLLM, reply, tool
from praisonai.managed import ManagedAgent
from praisonai.managed.events import Event
from praisonai.managed.fork import HOSTED_NOTE, fork_session
from praisonai.managed.instance._source import provider_of
from praisonai.managed.sessions import delete_session, session_json, show_session
from praisonai.managed.store import SqliteSessionStore


@pytest.fixture(params=["docker", "local"])
def compute(request: pytest.FixtureRequest) -> str:
    """Where the sessions' instances run, for real (docker: skipped without an engine)."""
    if request.param == "docker":
        request.getfixturevalue("docker_ok")
    return str(request.param)


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        yield server


@pytest.fixture
def made(home: Path) -> Iterator[list[str]]:
    """Session ids to delete after the test; then no snapshot and no instance may be left."""
    ids: list[str] = []
    yield ids
    for session_id in reversed(ids):
        with contextlib.suppress(SessionNotFoundError):
            delete_session(session_id)
    assert snapshots.list_snapshots() == [] and Ledger.default().entries() == []


def agent(llm: ScriptedLLM, compute: str, **config: Any) -> ManagedAgent:
    fields = {"model": "gpt-4o-mini", "environment": False, **config}
    return ManagedAgent(compute=compute, config=fields, api_key=API_KEY, base_url=f"{llm.url}/v1")


def three_turns(llm: ScriptedLLM, compute: str, made: list[str], **config: Any) -> str:
    """A closed session of three turns, each writing one file: a.txt, b.txt, c.txt."""
    llm.set_script([
        reply(tool("write_file", path="a.txt", content="one")), reply("wrote a"),
        reply(tool("write_file", path="b.txt", content="two")), reply("wrote b"),
        reply(tool("write_file", path="c.txt", content="three")), reply("wrote c"),
    ])  # fmt: skip
    with agent(llm, compute, **config) as first:
        for prompt in ("write a", "write b", "write c"):
            first.run(prompt)
        assert first.session_id is not None
        made.append(first.session_id)
        return first.session_id


def log(session_id: str) -> list[tuple[int, dict[str, Any]]]:
    """The session's events as stored: each with its turn."""
    return [(s.turn, s.event.to_json()) for s in SqliteSessionStore().events(session_id)]


def files(session_id: str) -> str:
    """``sha256sum`` of every file in the session's working dir, by name."""
    reference = show_session(session_id).record.sandbox
    assert reference is not None
    command = "find . -type f | sort | xargs -r sha256sum"  # commands start in the working dir
    result = _portal.call(provider_of(reference).execute, str(reference["instance_id"]), command, 60)
    assert result.exit_code == 0, result.stderr
    return result.stdout


def state() -> tuple[list[str], list[str], list[str]]:
    """The ids of the home's sessions, snapshots and instances."""
    sessions = [r.id for r in SqliteSessionStore().list_sessions(limit=100)]
    return (
        sessions,
        [s.id for s in snapshots.list_snapshots()],
        [e.instance_id for e in Ledger.default().entries()],
    )


def nothing_made(before: tuple[list[str], list[str], list[str]]) -> bool:
    return state() == before


def test_a_fork_at_turn_2_of_3_and_its_original_resume_on_their_own_files(
    llm: ScriptedLLM, made: list[str], compute: str
) -> None:
    original = three_turns(llm, compute, made, checkpoints=True)
    events, shown, on_disk = log(original), session_json(show_session(original), events=True), files(original)
    assert [turn for turn, e in events if e["type"] == "session.checkpoint"] == [1, 2, 3]

    with agent(llm, compute, checkpoints=True) as caller:
        result = caller.fork_session(original, at_turn=2, title="second try")
    made.append(result.session_id)
    assert (result.source_id, result.at_turn, result.note) == (original, 2, None)
    assert log(original) == events and session_json(show_session(original), events=True) == shown
    assert files(original) == on_disk, "the fork changed the original's instance"

    fork = show_session(result.session_id).record
    assert (fork.title, fork.turns, fork.status, fork.metadata["forked_from"]["at_turn"]) == (
        "second try",
        2,
        "idle",
        2,
    )
    copied = [(turn, e) for turn, e in events if turn <= 2 and e["type"] != "session.checkpoint"]
    assert log(result.session_id)[:-1] == copied and log(result.session_id)[-1][1]["type"] == "session.forked"
    assert "c.txt" not in files(result.session_id) and "b.txt" in files(result.session_id)

    llm.set_script([
        reply(tool("read_file", path="c.txt")), reply("fork read"),
        reply(tool("write_file", path="fork.txt", content="mine")), reply("fork wrote"),
        reply(tool("read_file", path="c.txt")), reply("original read"),
    ])  # fmt: skip
    with ManagedAgent.resume(result.session_id, api_key=API_KEY, base_url=f"{llm.url}/v1") as forked:
        forked.run("read c.txt")
        forked.run("write fork.txt")
        assert forked._live is not None and forked._live.sandbox is not None
        assert forked._live.sandbox.id == result.instance_id  # its own instance, reattached
    with ManagedAgent.resume(original, api_key=API_KEY, base_url=f"{llm.url}/v1") as again:
        again.run("read c.txt")
    assert last_result(result.session_id, "c.txt")["is_error"] is True
    assert "three" in last_result(original, "c.txt")["text"]
    assert "fork.txt" in files(result.session_id) and "fork.txt" not in files(original)
    assert show_session(original).record.turns == 4 and show_session(result.session_id).record.turns == 4


def last_result(session_id: str, path: str) -> dict[str, Any]:
    """The text and error flag of the session's last tool result of a ``read_file`` of ``path``."""
    found = SqliteSessionStore().events(session_id)
    uses = {
        s.event.data["call_id"]
        for s in found
        if s.event.type == "agent.tool_use" and s.event.data["input"] == {"path": path}
    }
    results = [
        s.event for s in found if s.event.type == "agent.tool_result" and s.event.data["call_id"] in uses
    ]
    last = results[-1]
    return {"text": last.text, "is_error": bool(last.data.get("is_error"))}


def test_deleting_the_original_first_then_the_fork_leaves_nothing(
    llm: ScriptedLLM, made: list[str], compute: str
) -> None:
    original = three_turns(llm, compute, made, checkpoints=True)
    reference = show_session(original).record.sandbox
    assert reference is not None
    held = snapshots.front(provider_of(reference)).part("snapshots", "held").held
    result = fork_session(original, 1)
    made.append(result.session_id)
    report = delete_session(original)
    assert report.ok, report.steps
    assert "a.txt" in files(result.session_id)  # the fork runs on from its snapshot
    assert delete_session(result.session_id).ok
    assert snapshots.list_snapshots() == [] and Ledger.default().entries() == []
    assert _portal.call(held) == [], "a snapshot is left on the provider"


def test_without_checkpoints_only_the_last_turn_forks(llm: ScriptedLLM, made: list[str]) -> None:
    original = three_turns(llm, "local", made)
    before = state()
    with pytest.raises(ConfigError, match=r"no checkpoint at turn 2, .*checkpoints=True") as refused:
        fork_session(original, 2)
    assert "\n" not in str(refused.value) and nothing_made(before)
    events, on_disk = log(original), files(original)
    latest = fork_session(original)  # the last turn: a snapshot of its instance now, the fork's own
    made.append(latest.session_id)
    assert latest.at_turn == 3 and "c.txt" in files(latest.session_id)
    assert log(original) == events and files(original) == on_disk
    assert [s.id for s in snapshots.list_snapshots()] == [latest.snapshot_id]
    assert delete_session(latest.session_id).ok
    assert snapshots.list_snapshots() == [], "the snapshot taken for the fork went with it"


@pytest.mark.parametrize(
    ("at_turn", "said"),
    [
        (0, r"--at-turn must be a turn of session msess_\w+, 1 to 3, not 0"),
        (4, r"1 to 3, not 4"),
        (-1, r"1 to 3, not -1"),
        (True, r"not True"),
        ("2", r"not '2'"),
        (2.0, r"not 2.0"),
    ],
)
def test_a_turn_that_is_none_of_its_turns_is_one_sentence_and_nothing_is_made(
    llm: ScriptedLLM, made: list[str], at_turn: Any, said: str
) -> None:
    original = three_turns(llm, "local", made, checkpoints=True)
    before = state()
    with pytest.raises(ConfigError, match=said) as refused:
        fork_session(original, at_turn)
    assert "\n" not in str(refused.value) and nothing_made(before)


@pytest.mark.parametrize("title", ["two\nlines", "bell\x07", "esc\x1b[31mred"])
def test_a_title_that_is_not_one_plain_line_is_refused_and_nothing_is_made(
    llm: ScriptedLLM, made: list[str], title: str
) -> None:
    original = three_turns(llm, "local", made, checkpoints=True)
    before = state()
    with pytest.raises(ConfigError, match="use plain text on one line") as refused:
        fork_session(original, 2, title=title)
    assert "\n" not in str(refused.value) and nothing_made(before)


@pytest.mark.parametrize(
    "session_id", ["msess_00000000000000000000000000", "../../etc/passwd", "msess_' OR 1=1 --"]
)
def test_an_unknown_session_is_one_sentence_and_nothing_is_made(home: Path, session_id: str) -> None:
    before = state()
    with pytest.raises(SessionNotFoundError) as refused:
        fork_session(session_id, 1)
    assert "\n" not in str(refused.value) and nothing_made(before)


def test_a_session_a_live_process_drives_is_not_forked(llm: ScriptedLLM, made: list[str]) -> None:
    original = three_turns(llm, "local", made, checkpoints=True)
    store = SqliteSessionStore()
    lease = store.acquire(original, "someone-else:1")  # as a turn in another process holds it
    before = state()
    try:
        with pytest.raises(SessionBusyError, match="fork it when its turn has ended"):
            fork_session(original, 2)
        assert nothing_made(before)
    finally:
        store.release(lease)


def test_a_hosted_session_forks_its_transcript_and_says_its_container_cannot(home: Path) -> None:
    store = SqliteSessionStore()
    hosted = store.upsert_agent("anthropic", "remote", {"model": "claude-haiku-4-5"})
    record, lease = store.create_session(hosted, owner_tag(), title="hosted")
    store.append(lease, [Event("user.message", {"content": [{"type": "text", "text": "hi"}]})], turn=1)
    store.update(
        lease, events=[Event("session.status_idle", {"stop_reason": {"type": "end_turn"}})], turn=1, turns=1
    )
    store.release(lease)
    events = log(record.id)
    result = fork_session(record.id)
    try:
        assert result.note == HOSTED_NOTE and result.snapshot_id is None and result.instance_id is None
        assert log(result.session_id)[:-1] == events and log(record.id) == events
    finally:
        for session_id in (result.session_id, record.id):
            store.delete_session(session_id)


def test_the_cli_prints_the_forks_id_and_refuses_bad_input_in_one_line(
    llm: ScriptedLLM, made: list[str], home: Path
) -> None:
    original = three_turns(llm, "local", made, checkpoints=True)
    env = {**os.environ, "PRAISONAI_HOME": str(home)}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "praisonai", "managed", "sessions", "fork", *args]
        return subprocess.run(
            command, capture_output=True, text=True, timeout=120, env=env, stdin=subprocess.DEVNULL
        )

    before = state()
    for bad in (["--at-turn", "0"], ["--at-turn", "9"]):
        refused = cli(original, *bad)
        assert refused.returncode != 0 and refused.stdout == "" and len(refused.stderr.splitlines()) == 1, (
            refused
        )
    assert nothing_made(before)
    done = cli(original, "--at-turn", "2", "--title", "from the cli", "--json")
    assert done.returncode == 0, done.stderr
    forked = json.loads(done.stdout)
    made.append(forked["session_id"])
    assert (forked["source_id"], forked["at_turn"]) == (original, 2)
    assert show_session(forked["session_id"]).record.title == "from the cli"
    card = subprocess.run(
        [sys.executable, "-m", "praisonai", "managed", "sessions", "show", forked["session_id"]],
        capture_output=True, text=True, timeout=120, env=env, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert f"forked   from {original} at turn 2\n" in card.stdout, card


class FailingStore(SqliteSessionStore):
    """A store whose new sessions cannot be written (a full disk, say): after the fork's
    instance and snapshot were made."""

    def create_session(self, *args: Any, **kwargs: Any) -> Any:
        raise OSError("no space left on device")


@pytest.mark.parametrize("checkpointed", [True, False])
def test_a_fork_that_fails_after_its_instance_was_made_removes_it(
    llm: ScriptedLLM, made: list[str], checkpointed: bool
) -> None:
    original = three_turns(llm, "local", made, checkpoints=checkpointed)
    before, events = state(), log(original)
    with pytest.raises(OSError, match="no space left"):
        fork_session(original, store=FailingStore())
    assert nothing_made(before) and log(original) == events  # its instance, and a snapshot taken for it, gone


def test_on_a_provider_without_snapshots_turns_end_unsaved_and_a_fork_is_one_sentence(
    llm: ScriptedLLM, made: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with_part = snapshots.front
    monkeypatch.setattr(snapshots, "front", lambda p: dataclasses.replace(with_part(p), snapshotter=None))
    original = three_turns(llm, "local", made, checkpoints=True)  # checkpoints asked, none possible
    assert show_session(original).record.status == "idle"
    assert not [e for _, e in log(original) if e["type"] == "session.checkpoint"]
    before = state()
    with pytest.raises(UnsupportedFeatureError) as refused:
        fork_session(original)
    assert "\n" not in str(refused.value) and nothing_made(before)
    with pytest.raises(ConfigError, match="turn checkpoints on"):
        fork_session(original, 1)
