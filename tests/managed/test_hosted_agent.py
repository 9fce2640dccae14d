"""ManagedAgent(provider="anthropic") end to end: the real ``anthropic`` client against the
Managed Agents fake (fakes.managed_agents), the sessions store under a test home.

What only the ManagedAgent level shows: the remote agent and environment made once per config
(concurrent runs in several processes included), a changed config updating the remote agent
under its version precondition while the old session stays pinned, a lost answer to a create
not making a second resource, callables as custom tools run here, the session resumed in a child
process, and the same store, events and usage as the local backend. The fake is a contract test
of our client code, not the service: see its docstring for what it models.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.managed_agents import API_KEY, ManagedAgentsFake, custom_tool, end_turn, say, tool, wait

from praisonai import _portal
from praisonai.managed import ManagedAgent
from praisonai.managed.store import SqliteSessionStore

Make = Callable[..., ManagedAgent]


@pytest.fixture
def fake() -> Iterator[ManagedAgentsFake]:
    with ManagedAgentsFake([say("hello there", chunks=2), end_turn()]) as server:
        yield server


@pytest.fixture
def make(home: Path, fake: ManagedAgentsFake) -> Iterator[Make]:
    made: list[ManagedAgent] = []

    def build(**config: Any) -> ManagedAgent:
        agent = ManagedAgent(provider="anthropic", config={"environment": False, **config},
                             api_key=API_KEY, base_url=fake.url)  # fmt: skip
        made.append(agent)
        return agent

    yield build
    for agent in made:
        agent.close()


def test_a_hosted_turn_streams_and_stores_the_api_events(make: Make, fake: ManagedAgentsFake) -> None:
    agent = make(model="claude-sonnet-4-6", session_title="first")
    seen = list(agent.stream("hi"))
    result = agent.last_result
    assert result is not None and (result.text, result.stop_reason) == ("hello there", "end_turn")
    assert [e.text for e in seen if e.type == "event_delta"] == ["hello ", "there"]
    record = agent.retrieve_session()
    assert record is not None and record.backend == "anthropic" and record.status == "idle"
    remote = fake.session(str(record.remote_session_id))
    assert remote["title"] == "first" and remote["metadata"] == {"praisonai_session": record.id}
    assert remote["agent"]["version"] == 1
    stored = [s.event for s in agent.store.events(record.id)]
    # the prompt is stored (under our id) before it is sent: the API's echo of it is not stored again
    api_ids = {e["id"] for e in fake.events(remote["id"]) if e["type"] != "user.message"}
    assert [e.id for e in stored if e.id.startswith("sevt_")] == sorted(api_ids), "every API event once"
    assert [e.text for e in stored if e.type == "user.message"] == ["hi"]
    assert not any(e.ephemeral for e in stored)


def test_one_remote_agent_and_environment_per_config_across_runs_and_threads(
    make: Make, fake: ManagedAgentsFake
) -> None:
    agents = [make(system="same") for _ in range(4)]
    threads = [threading.Thread(target=a.run, args=("hi",)) for a in agents]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(a.last_result is not None and a.last_result.stop_reason == "end_turn" for a in agents)
    assert len(fake.agents()) == 1 and len(fake.environments()) == 1
    assert len(fake.calls("agents.create")) == 1 and len(fake.calls("environments.create")) == 1
    assert len(fake.session_ids()) == 4


def test_concurrent_processes_make_one_remote_agent(home: Path, fake: ManagedAgentsFake) -> None:
    script = (
        "from praisonai.managed import ManagedAgent\n"
        f"a = ManagedAgent(provider='anthropic', config={{'environment': False}}, api_key='{API_KEY}',"
        f" base_url='{fake.url}')\n"
        "print(a.run('hi').stop_reason); a.close()\n"
    )
    children = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                                 env={**os.environ}) for _ in range(3)]  # fmt: skip
    outputs = [child.communicate(timeout=120)[0].strip() for child in children]
    assert outputs == ["end_turn"] * 3
    assert len(fake.calls("agents.create")) == 1 and len(fake.calls("environments.create")) == 1


def test_a_changed_config_updates_the_agent_and_the_old_session_keeps_its_version(
    make: Make, fake: ManagedAgentsFake
) -> None:
    first = make(system="v1")
    first.run("hi")
    second = make(system="v2")
    second.run("hi")
    (agent,) = fake.agents()
    assert agent["version"] == 2 and agent["system"] == "v2"
    sessions = {s: fake.session(s)["agent"]["version"] for s in fake.session_ids()}
    assert sorted(sessions.values()) == [1, 2]
    first.run("again")  # the first session goes on, on version 1
    assert fake.session(str(first.retrieve_session().remote_session_id))["agent"]["version"] == 1  # type: ignore[union-attr]


def test_a_lost_create_answer_makes_no_second_session_or_environment(
    make: Make, fake: ManagedAgentsFake
) -> None:
    fake.fail(500, on="environments.create", after=True)
    fake.fail(502, on="sessions.create", after=True)
    agent = make()
    assert agent.run("hi").stop_reason == "end_turn"
    assert len(fake.environments()) == 1 and len(fake.session_ids()) == 1


def test_a_python_callable_is_a_custom_tool_run_here(make: Make, fake: ManagedAgentsFake) -> None:
    calls: list[str] = []

    def lookup(word: str) -> str:
        """Look a word up."""
        calls.append(word)
        return f"{word}: a greeting"

    fake.set_script([custom_tool("lookup", {"word": "hello"}), say("done"), end_turn()])
    agent = make(tools=[{"type": "agent_toolset_20260401"}, lookup])
    assert agent.run("define hello").text == "done"
    assert calls == ["hello"]
    (remote_agent,) = fake.agents()
    assert [t["type"] for t in remote_agent["tools"]] == ["agent_toolset_20260401", "custom"]
    results = [e for e in fake.events(fake.session_ids()[0]) if e["type"] == "user.custom_tool_result"]
    assert results[0]["content"][0]["text"] == "hello: a greeting"


def test_the_session_is_resumed_in_a_child_process(home: Path, make: Make, fake: ManagedAgentsFake) -> None:
    agent = make(system="resumable")
    first = agent.run("hi")
    agent.close()
    script = (
        "import sys; from praisonai.managed import ManagedAgent\n"
        f"a = ManagedAgent.resume(sys.argv[1], api_key='{API_KEY}', base_url='{fake.url}')\n"
        "r = a.run('and again'); print(r.session_id, r.stop_reason); a.close()\n"
    )
    child = subprocess.run([sys.executable, "-c", script, first.session_id], capture_output=True, text=True,
                           timeout=120, env={**os.environ})  # fmt: skip
    assert child.returncode == 0, child.stderr
    assert child.stdout.split() == [first.session_id, "end_turn"]
    assert len(fake.session_ids()) == 1, "the same remote session goes on"
    sent = [e for e in fake.events(fake.session_ids()[0]) if e["type"] == "user.message"]
    assert [m["content"][0]["text"] for m in sent] == ["hi", "and again"]
    with SqliteSessionStore() as store:
        record = store.get_session(first.session_id)
        assert record.turns == 2 and record.backend == "anthropic"
        assert json.dumps(record.remote).count("environment_id") == 1


@pytest.mark.usefixtures("docker_ok")
def test_the_hosted_loop_runs_its_tools_on_our_docker_instance(home: Path, fake: ManagedAgentsFake) -> None:
    bash = tool("bash", {"command": "uname -s; echo made > here.txt"}, permission="allow")
    fake.set_script(
        [bash, tool("read", {"file_path": "here.txt"}, permission="allow"), say("done"), end_turn()]
    )
    agent = ManagedAgent(provider="anthropic", compute="docker", config={"environment": False},
                         api_key=API_KEY, base_url=fake.url)  # fmt: skip
    try:
        assert agent.run("go").text == "done"
        (env,) = fake.environments()
        assert env["config"] == {"type": "self_hosted"}
        results = [e for e in fake.events(fake.session_ids()[0]) if e["type"] == "user.tool_result"]
        texts = [e["content"][0]["text"] for e in results]
        assert "Linux" in texts[0] and "made" in texts[1], texts
        record = agent.retrieve_session()
        assert record is not None and record.sandbox is not None and record.sandbox["provider"] == "docker"
        _portal.call(agent.shutdown_compute)
    finally:
        agent.close()


def test_ctrl_c_in_the_cli_sends_an_interrupt_and_exits_130(home: Path, fake: ManagedAgentsFake) -> None:
    fake.set_script([say("working", chunks=1), wait(), say("never"), end_turn()])
    env = {**os.environ, "ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": API_KEY}
    child = subprocess.Popen(
        [sys.executable, "-m", "praisonai", "managed", "run", "go", "--provider", "anthropic"],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:

        def said() -> bool:
            return any(e["type"] == "agent.message" for s in fake.session_ids() for e in fake.events(s))

        assert fake.wait_until(said, timeout=60), child.communicate(timeout=5)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 130, err
    (sid,) = fake.session_ids()
    assert "user.interrupt" in [e["type"] for e in fake.events(sid)]
    assert "working" in out and "never" not in out
