"""PraisonAI's own API names work unchanged, as its users write them (the seed's usage patterns):
``SharedCompute("docker")`` with ``build_tools``/``ensure_provisioned``/``run_command``,
``Agent(tools_run_on="docker")``, ``AgentTeam(..., tools_run_on="docker")`` and
``Agent(backend=...)``. Real docker; the model is the scripted server driven by the real SDK."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

import praisonai
from praisonai import _portal
from praisonai._errors import ConfigError, InstanceNotFoundError, UnknownProviderError
from praisonai.agents import Agent, AgentFlow, AgentTeam
from praisonai.compute.lifecycle import owner_tag
from praisonai.compute.providers.docker import DockerCompute
from praisonai.llm.testing import ScriptedLLM, reply, tool
from praisonai.llm.types import AssistantMessage, UserMessage
from praisonai.managed import CAPABILITY_PROMPT

REPO = Path(__file__).resolve().parents[2]
BRIDGED = ["execute_command", "read_file", "write_file", "list_files"]


@pytest.fixture(autouse=True)
def no_environment_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A working directory without .praisonai/environment.yaml, unless a test writes one."""
    monkeypatch.chdir(tmp_path)


def mine(owner: str | None = None) -> list[str]:
    """Ids of the docker instances this process (or ``owner``) has running."""
    owner = owner or owner_tag()
    instances = _portal.call(DockerCompute().list_instances)
    return [i.instance_id for i in instances if i.labels.get("praisonai.owner") == owner]


def gone(instance_id: str) -> bool:
    try:
        _portal.call(DockerCompute().get_status, instance_id)
    except InstanceNotFoundError:
        return True
    return False


def tool_results(llm: ScriptedLLM) -> list[str]:
    """Every tool result the model was sent, once each, in order."""
    seen = {
        m["tool_call_id"]: m["content"] for r in llm.requests for m in r["messages"] if m["role"] == "tool"
    }
    return list(seen.values())


# ---- SharedCompute -------------------------------------------------------------------------


def test_shared_compute_is_exported_from_praisonai() -> None:
    from praisonai import SharedCompute
    from praisonai.managed import SharedCompute as Defined

    assert SharedCompute is Defined and "SharedCompute" in praisonai.__all__


@pytest.mark.usefixtures("docker_ok")
def test_shared_compute_by_its_praisonai_names() -> None:
    from praisonai import SharedCompute

    with SharedCompute("docker") as shared:
        assert shared.provider_name == "docker"
        tools = {t.__name__: t for t in shared.build_tools()}
        assert list(tools) == BRIDGED
        assert shared.instance_id is None, "building the tools must not provision"
        assert tools["write_file"]("notes/a.txt", "it's\nexact") == "Wrote 10 bytes to notes/a.txt"
        instance_id = shared.ensure_provisioned()
        assert instance_id == shared.instance_id and shared.ensure_provisioned() == instance_id
        assert mine() == [instance_id]
        r = shared.run_command("cat notes/a.txt; echo; pwd")
        assert isinstance(r, dict) and r["exit_code"] == 0 and r["stdout"] == "it's\nexact\n/workspace\n"
        r = shared.run_command("echo err >&2; exit 3", timeout=30)
        assert (r["exit_code"], r["stderr"], r.ok) == (3, "err\n", False)
        assert shared.run_command("sleep 30", timeout=1).timed_out
        assert tools["read_file"]("notes/a.txt") == "it's\nexact"
        assert "a.txt" in tools["list_files"]("notes")
        assert tools["execute_command"]("echo err >&2; exit 3") == "Error (exit 3): err"
    assert gone(instance_id)
    assert shared.instance_id is None, "as in PraisonAI; the next use provisions a new instance"


def test_an_unknown_place_is_refused_when_named() -> None:
    from praisonai import SharedCompute

    with pytest.raises(UnknownProviderError, match="unknown compute provider 'dokcer'"):
        SharedCompute("dokcer")
    with pytest.raises(UnknownProviderError):
        Agent("coder", tools_run_on="dokcer")
    with pytest.raises(ConfigError, match="working_dir must be an absolute path"):
        SharedCompute("local", working_dir="relative/dir")


def test_working_dir_and_idle_timeout_are_config_fields_and_config_wins(tmp_path: Path) -> None:
    from praisonai import SharedCompute

    plain = SharedCompute("local")
    assert plain.working_dir == "/workspace" and plain._planned().config.idle_timeout_s == 300
    passed = SharedCompute("local", working_dir="/srv/app", idle_timeout_s=120)
    assert (passed.working_dir, passed._planned().config.idle_timeout_s) == ("/srv/app", 120)
    both = SharedCompute("local", config={"working_dir": "/opt/x"}, working_dir="/srv/app", idle_timeout_s=90)
    assert (both.working_dir, both._planned().config.idle_timeout_s) == ("/opt/x", 90)
    # the environment file is read under the arguments: only a value the caller passed beats it
    (tmp_path / ".praisonai").mkdir()
    (tmp_path / ".praisonai" / "environment.yaml").write_text("working_dir: /from/file\n")
    assert SharedCompute("local").working_dir == "/from/file"
    assert SharedCompute("local", working_dir="/workspace").working_dir == "/workspace"


@pytest.mark.usefixtures("docker_ok")
def test_working_dir_reaches_the_instance() -> None:
    from praisonai import SharedCompute

    with SharedCompute("docker", working_dir="/srv/app", idle_timeout_s=120) as shared:
        assert shared.run_command("pwd")["stdout"] == "/srv/app\n"
        assert shared.plan is not None and shared.plan.config.idle_timeout_s == 120


@pytest.mark.usefixtures("docker_ok")
def test_auto_shutdown_false_leaves_the_instance_running() -> None:
    from praisonai import SharedCompute

    shared = SharedCompute("docker", auto_shutdown=False)
    kept: str | None = None
    try:
        with shared:
            shared.run_command("echo kept > kept.txt")
            kept = shared.instance_id
        assert kept is not None and not gone(kept) and shared.instance_id is None
        assert _portal.call(DockerCompute().execute, kept, "cat kept.txt").stdout == "kept\n"
    finally:
        if kept is not None:
            _portal.call(DockerCompute().shutdown, kept)


# ---- Agent(tools_run_on=...) ---------------------------------------------------------------


@pytest.mark.usefixtures("docker_ok")
def test_an_agents_tools_run_on_its_own_instance_across_turns_until_closed() -> None:
    script = [
        reply(tool("write_file", path="turn1.txt", content="from turn one")),
        reply("wrote"),
        reply(tool("execute_command", command="cat turn1.txt")),
        reply("read"),
    ]
    with ScriptedLLM(script) as llm:
        agent = Agent(name="coder", instructions="You code.", tools_run_on="docker", **llm.openai_kwargs())
        try:
            assert agent.tools == [] and mine() == [], "nothing is made before the first tool call"
            assert agent.start("write it") == "wrote"
            (instance_id,) = mine()
            assert agent.chat("read it") == "read"
            assert mine() == [instance_id], "the second turn must use the same instance"
        finally:
            agent.close()
        assert gone(instance_id)
    assert tool_results(llm) == ["Wrote 13 bytes to turn1.txt", "from turn one"]
    first = llm.requests[0]
    assert first["messages"][0]["content"] == f"You code.\n\n{CAPABILITY_PROMPT}"
    assert [t["function"]["name"] for t in first["tools"]] == [*BRIDGED, "edit_file", "grep", "glob"]
    assert (agent.tools, agent.instructions, agent.backstory) == ([], "You code.", None), "close() restores"
    agent.close()  # idempotent


class CountingDocker(DockerCompute):
    provisions = 0

    async def provision(self, config: object = None) -> Any:
        type(self).provisions += 1
        return await super().provision(config)


@pytest.mark.usefixtures("docker_ok")
def test_concurrent_first_turns_of_one_agent_make_one_instance() -> None:
    def script(path: str, body: dict[str, Any]) -> Any:
        if body["messages"][-1]["role"] == "user":
            return reply(tool("execute_command", command="echo hi"))
        return reply("done")

    CountingDocker.provisions = 0
    with ScriptedLLM(script) as llm:
        with Agent("coder", tools_run_on=CountingDocker(), **llm.openai_kwargs()) as agent:
            start, answers = threading.Barrier(4), []

            def turn() -> None:
                start.wait()
                answers.append(agent.chat("go"))

            threads = [threading.Thread(target=turn) for _ in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(120)
            assert answers == ["done"] * 4 and len(mine()) == 1
        assert mine() == []
    assert CountingDocker.provisions == 1
    assert tool_results(llm) == ["hi"] * 4


# Each child talks to the parent's scripted model (argv[1]) and runs one tool call in docker.
AT_EXIT = """
import sys
from praisonai.agents import Agent
agent = Agent("coder", tools_run_on="docker", base_url=sys.argv[1], api_key="k")
print(agent.start("go"), flush=True)
# exits without close(): interpreter exit must remove the instance
"""

DROPPED = """
import gc, sys, time
from praisonai import _portal
from praisonai._errors import InstanceNotFoundError
from praisonai.agents import Agent
from praisonai.compute.lifecycle import owner_tag
from praisonai.compute.providers.docker import DockerCompute
agent = Agent("coder", tools_run_on="docker", base_url=sys.argv[1], api_key="k")
print(agent.start("go"), flush=True)
listed = _portal.call(DockerCompute().list_instances)
(instance,) = [i for i in listed if i.labels.get("praisonai.owner") == owner_tag()]
del agent  # never closed: collecting it must release the instance
gc.collect()
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    try:
        _portal.call(DockerCompute().get_status, instance.instance_id)
    except InstanceNotFoundError:
        print("released", flush=True)
        break
    time.sleep(0.2)
"""


@pytest.mark.usefixtures("docker_ok")
@pytest.mark.parametrize(
    ("code", "said"), [(AT_EXIT, "ok\n"), (DROPPED, "ok\nreleased\n")], ids=["exit", "gc"]
)
def test_an_agent_never_closed_still_removes_its_instance(code: str, said: str) -> None:
    """In a child process of its own, so only its instances are listed there, and no test harness
    holds on to frames (pytest keeps a warning's traceback, and with it the agent, for a while)."""
    with ScriptedLLM([reply(tool("execute_command", command="echo hi")), reply("ok")]) as llm:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
        child = subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(code), llm.openai_kwargs()["base_url"]],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        owner = f"{owner_tag().rpartition(':')[0]}:{child.pid}"
        try:
            out, err = child.communicate(timeout=180)
            assert (child.returncode, out) == (0, said), err
            assert tool_results(llm) == ["hi"]
            assert mine(owner) == [], "the child left its instance behind"
        finally:
            for instance_id in mine(owner):
                _portal.call(DockerCompute().shutdown, instance_id)


# ---- AgentTeam / AgentFlow ------------------------------------------------------------------


@pytest.mark.usefixtures("docker_ok")
def test_agent_team_tools_run_on_docker() -> None:
    script = [
        reply(tool("write_file", path="note.txt", content="from the writer")),
        reply("written"),
        reply(tool("read_file", path="note.txt")),
        reply("read"),
    ]
    with ScriptedLLM(script) as llm:
        endpoint = llm.openai_kwargs()
        writer = Agent(name="writer", instructions="You write.", **endpoint)
        reader = Agent(name="reader", instructions="You read.", **endpoint)
        try:
            result = AgentTeam(agents=[writer, reader], tools_run_on="docker").start("share a note")
        finally:
            writer.close()
            reader.close()
    assert result.text == "read"
    assert tool_results(llm) == ["Wrote 15 bytes to note.txt", "from the writer"]
    assert mine() == [], "the team left its instance behind"
    assert writer.tools == [] and writer.instructions == "You write."


def test_both_spellings_of_the_place_agree_or_are_refused() -> None:
    agent = Agent("a", api_key="k")
    with pytest.raises(ConfigError, match=r"AgentTeam was given compute='docker' and tools_run_on='local'"):
        AgentTeam([agent], compute="docker", tools_run_on="local")
    with pytest.raises(ConfigError, match=r"AgentFlow was given compute='local' and tools_run_on='docker'"):
        AgentFlow([agent], compute="local", tools_run_on="docker")
    with pytest.raises(ConfigError, match="backend= or tools_run_on=, not both"):
        Agent("b", backend=EchoBackend(), tools_run_on="docker")
    team = AgentTeam([agent], tools_run_on="docker")
    assert team.compute == team.tools_run_on == "docker"
    assert AgentFlow([agent], tools_run_on="local").compute == "local"
    assert AgentTeam([agent], compute="docker", tools_run_on="Docker").compute == "docker"  # one place


def test_a_run_level_place_leaves_an_agent_with_its_own_place_alone() -> None:
    from praisonai import SharedCompute

    own = Agent("own", api_key="k", tools_run_on="docker")
    plain = Agent("plain", api_key="k")
    with SharedCompute("local") as shared:
        shared.attach([own, plain])
        assert own.tools == [] and [t.__name__ for t in plain.tools] == BRIDGED
    assert plain.tools == []


# ---- Agent(backend=...) ---------------------------------------------------------------------


class EchoBackend:
    """A stand-in for the user's own backend object (PraisonAI's ManagedBackendProtocol)."""

    def __init__(self) -> None:
        self.prompts: list[str] = []
        self.streams_closed = 0

    async def execute(self, prompt: str) -> str:
        self.prompts.append(prompt)
        if prompt == "fail":
            raise RuntimeError("the backend failed")
        await anyio.sleep(0)
        return f"done: {prompt}"

    def stream_text(self, prompt: str) -> Iterator[str]:
        self.prompts.append(prompt)
        try:
            yield from ("do", "ne: ", prompt)
        finally:
            self.streams_closed += 1


def test_agent_with_a_backend_delegates_every_turn_and_records_it() -> None:
    backend = EchoBackend()
    with ScriptedLLM() as llm:
        agent = Agent(name="coder", backend=backend, **llm.openai_kwargs())
        assert agent.start("a") == "done: a"
        assert agent.chat("b") == "done: b"
        assert anyio.run(agent.achat, "c") == "done: c"
        assert anyio.run(agent.astart, "d") == "done: d"
        assert list(agent.stream("e")) == ["do", "ne: ", "e"]
        with pytest.raises(RuntimeError, match="the backend failed"):
            agent.chat("fail")
        pieces = agent.stream("f")
        assert next(pieces) == "do"
        pieces.close()  # the caller stops early: the backend's stream is closed, the part recorded
        agent.close()
    assert backend.prompts == ["a", "b", "c", "d", "e", "fail", "f"] and backend.streams_closed == 2
    turns = [
        ("a", "done: a"),
        ("b", "done: b"),
        ("c", "done: c"),
        ("d", "done: d"),
        ("e", "done: e"),
        ("f", "do"),
    ]
    assert agent.history == [m for u, a in turns for m in (UserMessage(u), AssistantMessage(a))]
    assert llm.requests == [], "the agent's own model must not be called"


def test_stream_without_a_backend_yields_the_final_text_once() -> None:
    with ScriptedLLM([reply("hello there")]) as llm, Agent("a", **llm.openai_kwargs()) as agent:
        assert list(agent.stream("hi")) == ["hello there"]
        assert agent.history == [UserMessage("hi"), AssistantMessage("hello there")]
    assert json.dumps(llm.requests[0]["messages"][-1]) == json.dumps({"role": "user", "content": "hi"})
