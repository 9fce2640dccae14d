"""Sessions outlive their process: resume in a child process, after a SIGKILL mid-tool-call, after
the instance was removed, against a live holder (busy), and interrupt during a long command.
Real docker, real processes, the real openai client against the scripted model."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from praisonai import _portal
from praisonai._errors import SessionBusyError
from praisonai.llm.testing import API_KEY, ScriptedLLM, reply, tool
from praisonai.managed import ManagedAgent
from praisonai.managed.events import Event
from praisonai.managed.instance._source import REPLACED_NOTE
from praisonai.managed.live._history import open_calls
from praisonai.managed.sessions import delete_session
from praisonai.managed.store import SqliteSessionStore

pytestmark = pytest.mark.usefixtures("docker_ok")

CHILD = f"""
import json, sys
from praisonai.managed import ManagedAgent
session_id, url, prompt = sys.argv[1:4]
agent = ManagedAgent.resume(session_id, api_key={API_KEY!r}, base_url=url + "/v1")
print("resumed", flush=True)
result = agent.run(prompt)
live = agent._live
print(json.dumps({{"text": result.text, "instance_id": live.sandbox.id if live and live.sandbox else None}}))
agent.close()
"""

FIRST = f"""
import sys
from praisonai.managed import ManagedAgent
url, prompt = sys.argv[1:3]
agent = ManagedAgent(compute="docker", config={{"model": "gpt-4o-mini", "environment": False}},
                     api_key={API_KEY!r}, base_url=url + "/v1")
for event in agent.stream(prompt):
    if event.type == "session.status_running":
        print(agent.session_id, flush=True)
"""


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        yield server


@pytest.fixture
def sessions(home: Path) -> Iterator[list[str]]:
    """Session ids to delete (with their instances) after the test."""
    made: list[str] = []
    yield made
    for session_id in made:
        with contextlib.suppress(LookupError):
            delete_session(session_id)


def new_agent(llm: ScriptedLLM) -> ManagedAgent:
    config = {"model": "gpt-4o-mini", "environment": False}
    return ManagedAgent(compute="docker", config=config, api_key=API_KEY, base_url=f"{llm.url}/v1")


def events(session_id: str) -> list[Event]:
    return [s.event for s in SqliteSessionStore().events(session_id)]


def run_child(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CHILD, *args], capture_output=True, text=True, timeout=timeout
    )


def wait_for(condition: Callable[[], Any], what: str, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_resume_in_a_child_process_reattaches_the_same_instance(
    llm: ScriptedLLM, sessions: list[str]
) -> None:
    llm.set_script([
        reply(tool("write_file", path="note.txt", content="kept")), reply("written"),
        reply(tool("read_file", path="note.txt")), reply("it says kept"),
    ])  # fmt: skip
    agent = new_agent(llm)
    agent.run("write note.txt")
    assert agent.session_id is not None
    sessions.append(agent.session_id)
    first_instance = agent._live.sandbox.id if agent._live and agent._live.sandbox else None
    before = [e.to_json() for e in events(agent.session_id)]
    agent.close()

    child = run_child(agent.session_id, llm.url, "what does note.txt say?")
    assert child.returncode == 0, child.stderr
    outcome = json.loads(child.stdout.splitlines()[-1])
    assert outcome == {"text": "it says kept", "instance_id": first_instance}
    after = events(agent.session_id)
    assert [e.to_json() for e in after[: len(before)]] == before, "the transcript changed"
    kinds = [e.type for e in after[len(before) :]]
    assert kinds[:2] == ["session.resumed", "sandbox.reattached"] and "sandbox.provisioned" not in kinds
    # the child's first request carried the whole history
    assert "kept" in json.dumps(llm.requests[2]["messages"])


def test_resume_after_sigkill_mid_tool_call(llm: ScriptedLLM, sessions: list[str]) -> None:
    llm.set_script([reply(tool("execute_command", command="sleep 300")), reply("recovered")])
    first = subprocess.Popen(
        [sys.executable, "-c", FIRST, llm.url, "sleep a while"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert first.stdout is not None
        session_id = first.stdout.readline().strip()
        sessions.append(session_id)
        wait_for(lambda: open_calls(events(session_id)), "the tool use to be recorded")
        wait_for(lambda: any(e.type == "sandbox.provisioned" for e in events(session_id)), "the instance")
        time.sleep(0.5)  # the command is running in the instance
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()

    agent = ManagedAgent.resume(session_id, api_key=API_KEY, base_url=f"{llm.url}/v1")  # no force needed
    result = agent.run("carry on")
    agent.close()
    assert result.text == "recovered" and result.stop_reason == "end_turn"
    log = events(session_id)
    (answer,) = [e for e in log if e.type == "agent.tool_result"]
    assert answer.data["is_error"] and "process running this tool stopped" in answer.text
    provisioned = next(e for e in log if e.type == "sandbox.provisioned")
    reattached = next(e for e in log if e.type == "sandbox.reattached")
    assert reattached.data["instance_id"] == provisioned.data["instance_id"]
    sent = llm.requests[-1]["messages"]
    tool_messages = [m for m in sent if m["role"] == "tool"]
    assert len(tool_messages) == 1 and "stopped" in tool_messages[0]["content"]


def test_resume_after_the_instance_was_removed_replaces_and_announces_it(
    llm: ScriptedLLM, sessions: list[str]
) -> None:
    llm.set_script([
        reply(tool("write_file", path="a.txt", content="x")), reply("ok"),
        reply(tool("list_files")), reply("fresh instance"),
    ])  # fmt: skip
    agent = new_agent(llm)
    agent.run("write a.txt")
    assert agent.session_id is not None and agent._live is not None and agent._live.sandbox is not None
    sessions.append(agent.session_id)
    old = agent._live.sandbox.id
    _portal.call(agent.shutdown_compute)
    agent.close()

    resumed = ManagedAgent.resume(agent.session_id, api_key=API_KEY, base_url=f"{llm.url}/v1")
    assert resumed.run("and now?").text == "fresh instance"
    resumed.close()
    (replaced,) = [e for e in events(agent.session_id) if e.type == "sandbox.replaced"]
    assert replaced.data["previous_instance_id"] == old and replaced.data["instance_id"] != old
    assert "workspace files" in replaced.data["lost"]
    assert REPLACED_NOTE in json.dumps(llm.requests[2]["messages"])


def test_a_session_held_by_a_live_process_is_busy(llm: ScriptedLLM, sessions: list[str]) -> None:
    llm.set_script([reply("hello"), reply(tool("execute_command", command="sleep 300")), reply("done")])
    agent = new_agent(llm)
    agent.run("hi")
    assert agent.session_id is not None
    sessions.append(agent.session_id)
    agent.close()

    holder = subprocess.Popen(
        [sys.executable, "-c", CHILD, agent.session_id, llm.url, "sleep"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "resumed"
        with pytest.raises(SessionBusyError):
            ManagedAgent.resume(agent.session_id, api_key=API_KEY, base_url=f"{llm.url}/v1")
    finally:
        holder.kill()
        holder.wait()
    # its holder gone, the session is free again
    ManagedAgent.resume(agent.session_id, api_key=API_KEY, base_url=f"{llm.url}/v1").close()


@pytest.mark.alone  # it interrupts a command at a moment
def test_interrupt_kills_the_running_command_and_leaves_the_session_resumable(
    llm: ScriptedLLM, sessions: list[str]
) -> None:
    command = "sh -c 'sleep 300 & sleep 300'"
    llm.set_script([reply(tool("execute_command", command=command)), reply("resumed fine")])
    agent = new_agent(llm)
    seen: list[Event] = []
    started = threading.Event()

    def consume() -> None:
        for event in agent.stream("run it"):
            seen.append(event)
            if event.type == "agent.tool_use":
                started.set()

    worker = threading.Thread(target=consume)
    worker.start()
    assert started.wait(120)
    time.sleep(1.0)  # the command runs in the instance
    agent.interrupt()
    worker.join(60)
    assert not worker.is_alive(), "the turn did not stop"
    assert agent.session_id is not None
    sessions.append(agent.session_id)
    result = agent.last_result
    assert result is not None and result.stop_reason == "interrupted" and result.status == "interrupted"
    assert agent._live is not None and agent._live.sandbox is not None
    ps = _portal.call(agent._live.sandbox.exec, "ps -eo args")
    assert "sleep 300" not in ps.stdout, ps.stdout
    kinds = [e.type for e in seen]
    assert kinds[-2:] == ["user.interrupt", "session.status_idle"]
    (cut,) = [e for e in seen if e.type == "agent.tool_result"]
    assert cut.data["is_error"] and "interrupted" in cut.text
    # resumable: the next turn goes on, with a well-formed history
    assert agent.run("go on").text == "resumed fine"
    agent.close()


def test_interrupt_mid_stream_keeps_the_partial_message(llm: ScriptedLLM, sessions: list[str]) -> None:
    llm.set_script([reply("one two three four five six seven eight", chunks=8, delay_s=0.5), reply("next")])
    agent = ManagedAgent(compute="local", config={"model": "gpt-4o-mini", "environment": False},
                         api_key=API_KEY, base_url=f"{llm.url}/v1")  # fmt: skip
    deltas = 0
    for event in agent.stream("count"):
        if event.type == "event_delta":
            deltas += 1
            if deltas == 2:
                agent.interrupt()
    assert agent.session_id is not None
    sessions.append(agent.session_id)
    (message,) = [e for e in events(agent.session_id) if e.type == "agent.message"]
    assert message.data["interrupted"] is True and message.text.startswith("one")
    assert message.text != "one two three four five six seven eight"
    assert agent.run("again").text == "next"
    agent.close()


def test_leaving_a_stream_early_interrupts_the_turn(llm: ScriptedLLM, sessions: list[str]) -> None:
    llm.set_script([reply("a b c d e f", chunks=6, delay_s=0.5)])
    agent = ManagedAgent(compute="local", config={"model": "gpt-4o-mini", "environment": False},
                         api_key=API_KEY, base_url=f"{llm.url}/v1")  # fmt: skip
    for event in agent.stream("go"):
        if event.type == "event_delta":
            break
    assert agent.session_id is not None
    sessions.append(agent.session_id)
    record = agent.retrieve_session()
    assert record is not None and record.status == "interrupted"
    agent.close()
