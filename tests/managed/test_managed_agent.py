"""ManagedAgent's local loop end to end: the model is the scripted server driven by the real openai
client, the tools run in real docker containers (or local workspaces), the store is real sqlite."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kit import write_wheel

from praisonai import _portal
from praisonai._errors import ConfigError
from praisonai.llm.testing import API_KEY, ScriptedLLM, reply, tool
from praisonai.managed import ManagedAgent
from praisonai.managed.events import Event
from praisonai.managed.sessions import delete_session

Make = Callable[..., ManagedAgent]
#: The Anthropic toolset with every tool asking for confirmation.
ASK = [{"type": "agent_toolset_20260401", "default_config": {"permission_policy": {"type": "always_ask"}}}]


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        yield server


@pytest.fixture
def make(home: Path, llm: ScriptedLLM) -> Iterator[Make]:
    """ManagedAgents on the scripted model; their sessions (and instances) are deleted afterwards."""
    made: list[ManagedAgent] = []

    def build(compute: object = "docker", **config: Any) -> ManagedAgent:
        fields = {"model": "gpt-4o-mini", "environment": False, **config}
        agent = ManagedAgent(compute=compute, config=fields, api_key=API_KEY, base_url=f"{llm.url}/v1")
        made.append(agent)
        return agent

    yield build
    for agent in made:
        agent.close()
        if agent.session_id is not None:
            with contextlib.suppress(LookupError):  # the test deleted it
                delete_session(agent.session_id)


def stored(agent: ManagedAgent) -> list[Event]:
    assert agent.session_id is not None
    return [s.event for s in agent.store.events(agent.session_id)]


@pytest.mark.usefixtures("docker_ok")
def test_a_full_turn_on_docker_streams_events_in_order_and_stores_them(make: Make, llm: ScriptedLLM) -> None:
    llm.set_script([
        reply("Writing it.", tool("write_file", path="fib.py", content="print(6765)\n"), input_tokens=100,
              output_tokens=20, cache_read_tokens=7),
        reply(tool("execute_command", command="python3 fib.py"), input_tokens=130, output_tokens=10),
        reply("fib(20) is 6765", chunks=3, input_tokens=150, output_tokens=8),
    ])  # fmt: skip
    agent = make("docker")
    events = list(agent.stream("Write fib.py, run it, print fib(20)"))
    result = agent.last_result
    assert result is not None and result.text == "fib(20) is 6765" and result.stop_reason == "end_turn"

    kinds = [e.type for e in events if not e.ephemeral]
    assert kinds[:2] == ["session.status_running", "user.message"]
    assert kinds[-1] == "session.status_idle" and events[-1].stop_reason == "end_turn"
    assert kinds.count("span.model_request_start") == 3 == kinds.count("span.model_request_end")
    uses = [e for e in events if e.type == "agent.tool_use"]
    results = [e for e in events if e.type == "agent.tool_result"]
    assert [u.data["name"] for u in uses] == ["write_file", "execute_command"]
    assert [r.data["tool_use_id"] for r in results] == [u.id for u in uses]
    assert results[1].data["exit_code"] == 0 and "6765" in results[1].text
    assert kinds.index("sandbox.provisioned") < kinds.index("agent.tool_result")
    deltas = [e.text for e in events if e.type == "event_delta"]
    assert "".join(deltas[-3:]) == "fib(20) is 6765"

    # the transcript in the store is exactly what was streamed, minus the deltas
    assert [e.to_json() for e in stored(agent)] == [e.to_json() for e in events if not e.ephemeral]
    # usage: per request, and cumulative
    assert result.usage.input_tokens == 380 and result.usage.output_tokens == 38
    assert result.usage.cache_read_tokens == 7 and result.usage.requests == 3
    record = agent.retrieve_session()
    assert record is not None and record.usage["input_tokens"] == 380 and record.turns == 1
    per_turn = agent.store.turn_usage(agent.session_id or "")
    assert [(u.turn, u.requests, u.input_tokens) for u in per_turn] == [(1, 3, 380)]
    # the model saw the command's real output
    assert "6765" in json.dumps(llm.requests[2]["messages"][-1])


def test_a_second_turn_continues_the_session_and_its_instance(make: Make, llm: ScriptedLLM) -> None:
    llm.set_script([
        reply(tool("write_file", path="a.txt", content="one")), reply("ok"),
        reply(tool("read_file", path="a.txt")), reply("it says one"),
    ])  # fmt: skip
    agent = make("local")
    first = agent.run("write a.txt")
    second = agent.run("what is in a.txt?")
    assert first.session_id == second.session_id and second.text == "it says one"
    assert "one" in json.dumps(llm.requests[3]["messages"])
    record = agent.retrieve_session()
    assert record is not None and record.turns == 2 and record.status == "idle"
    assert sum(e.type == "sandbox.provisioned" for e in stored(agent)) == 1


def test_confirmation_allow_and_deny(make: Make, llm: ScriptedLLM) -> None:
    asked: list[str] = []

    def confirm(request: Any) -> str:
        asked.append(request.input["command"])
        return "allow" if "echo" in request.input["command"] else "deny"

    both = reply(
        tool("execute_command", command="echo hi"), tool("execute_command", command="rm -rf /workspace")
    )
    llm.set_script([both, reply("done")])
    agent = make("local", tools=ASK)
    agent.on_tool_confirmation = confirm
    result = agent.run("go")
    assert result.stop_reason == "end_turn" and asked == ["echo hi", "rm -rf /workspace"]
    events = stored(agent)
    confirmations = [e.data["result"] for e in events if e.type == "user.tool_confirmation"]
    assert confirmations == ["allow", "deny"]
    results = [e for e in events if e.type == "agent.tool_result"]
    assert "hi" in results[0].text and not results[0].data["is_error"]
    assert results[1].data["is_error"] and "denied" in results[1].text


def test_without_a_callback_ask_is_denied_and_none_leaves_it_pending(make: Make, llm: ScriptedLLM) -> None:
    llm.set_script([reply(tool("execute_command", command="touch x")), reply("gave up")])
    agent = make("local", tools=ASK)
    assert agent.run("go").text == "gave up"
    assert [e.data["result"] for e in stored(agent) if e.type == "user.tool_confirmation"] == ["deny"]

    llm.set_script([reply(tool("execute_command", command="echo later")), reply("finished")])
    agent = make("local", tools=ASK)
    agent.on_tool_confirmation = lambda request: None
    result = agent.run("go")
    assert result.stop_reason == "requires_action" and result.status == "requires_action"
    assert [p["name"] for p in result.pending] == ["execute_command"]
    # a later approval runs it and the turn goes on
    agent.on_tool_confirmation = lambda request: "allow"
    resumed = agent.run("go on")
    assert resumed.stop_reason == "end_turn" and resumed.text == "finished"
    output = [e for e in stored(agent) if e.type == "agent.tool_result"]
    assert len(output) == 1 and "later" in output[0].text


def test_custom_tool_from_a_json_schema(make: Make, llm: ScriptedLLM) -> None:
    calls: list[tuple[str, Any]] = []

    def on_custom(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        calls.append((name, arguments))
        return {"temperature": 21}

    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    weather = {
        "type": "custom",
        "name": "get_weather",
        "description": "Weather in a city.",
        "input_schema": schema,
    }
    llm.set_script([reply(tool("get_weather", city="Paris")), reply("21 degrees")])
    agent = make("local", tools=["read_file", weather])
    agent.on_custom_tool = on_custom
    assert agent.run("weather in Paris?").text == "21 degrees"
    assert calls == [("get_weather", {"city": "Paris"})]
    sent = {t["function"]["name"]: t["function"] for t in llm.requests[0]["tools"]}
    assert set(sent) == {"read_file", "get_weather"} and sent["get_weather"]["parameters"] == schema
    kinds = [e.type for e in stored(agent)]
    assert "agent.custom_tool_use" in kinds and "user.custom_tool_result" in kinds


def test_budget_reached_stops_before_the_next_request(make: Make, llm: ScriptedLLM) -> None:
    llm.set_script([reply(tool("list_files"), input_tokens=900, output_tokens=200), reply("never")])
    agent = make("local", budget_tokens=1000)
    result = agent.run("go")
    assert result.stop_reason == "budget_reached" and len(llm.requests) == 1


def test_max_turns_bounds_the_model_requests(make: Make, llm: ScriptedLLM) -> None:
    llm.set_script(lambda path, body: reply(tool("list_files")))
    agent = make("local", max_turns=3)
    assert agent.run("loop forever").stop_reason == "max_turns" and len(llm.requests) == 3


@pytest.mark.usefixtures("docker_ok")
def test_packages_are_installed_in_the_instance_never_on_the_host(
    make: Make, llm: ScriptedLLM, tmp_path: Path
) -> None:
    wheels = tmp_path / "wheels"  # pip installs offline from a mounted wheel: no index is reachable
    wheels.mkdir()
    write_wheel(wheels, "praisonai_probe", "1.2", "VALUE = 'in the instance'\n")
    environment = tmp_path / "environment.yaml"
    environment.write_text(
        f"mount_paths: ['{wheels}:/wheels:ro']\nnetwork: none\n"
        "env: {PIP_NO_INDEX: '1', PIP_FIND_LINKS: /wheels}\n"
    )
    probe = "python3 -c 'import praisonai_probe as p; print(p.VALUE)'"
    llm.set_script([reply(tool("execute_command", command=probe)), reply("ok")])
    agent = make("docker", packages={"pip": ["praisonai-probe>=1.0"]}, environment=str(environment))
    try:
        agent.run("is the probe there?")
        results = [e for e in stored(agent) if e.type == "agent.tool_result"]
    finally:  # the packages made a capture of the definition: remove it with the session
        live = agent._live
        if live is not None and live.sandbox is not None and live.sandbox.plan is not None:
            capture = f"praisonai-capture:{live.sandbox.plan.config.capture_tag()}"
            agent.close()
            delete_session(agent.session_id or "")
            subprocess.run(["docker", "rmi", "-f", capture], capture_output=True, check=False)
    (result,) = results
    assert result.data["exit_code"] == 0 and "in the instance" in result.text
    assert importlib.util.find_spec("praisonai_probe") is None, "installed on the host"
    with pytest.raises(ConfigError, match="host_packages_ok"):
        ManagedAgent(config={"packages": {"pip": ["requests"]}})  # no compute: it would be this machine


def test_no_api_key_is_one_sentence_before_anything_is_provisioned(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    agent = ManagedAgent(compute="local", config={"environment": False})
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        agent.run("hello")
    assert agent.session_id is None  # no session, no instance


def test_the_hosted_provider_without_a_key_and_an_unknown_provider_are_one_sentence(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in ("ANTHROPIC_API_KEY", "CLAUDE_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    hosted = ManagedAgent(provider="anthropic")
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        hosted.run("hello")
    assert hosted.session_id is None
    with pytest.raises(ConfigError, match="unknown managed provider 'kubernetes': provider= names where"):
        ManagedAgent(provider="kubernetes")


def test_the_agent_backend_delegation(make: Make, llm: ScriptedLLM) -> None:
    from praisonai import Agent

    llm.set_script([reply("hello from the managed loop", chunks=2)])
    managed = make("local")
    agent = Agent(name="coder", backend=managed)
    assert agent.start("hi") == "hello from the managed loop"
    assert managed.session_id is not None and _portal.call(managed.execute_in_compute, "true").exit_code == 0


@pytest.mark.usefixtures("docker_ok")
def test_an_instance_gone_between_turns_is_replaced_and_announced(
    make: Make, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The idle policy (or anyone) may remove the instance while the session sits idle in this
    process: the next turn finds out, makes a new one and tells the model."""
    llm.set_script([reply(tool("write_file", path="a.txt", content="x")), reply("ok"), reply("noted")])
    agent = make("docker")
    agent.run("write a.txt")
    assert agent._live is not None and agent._live.sandbox is not None
    old = agent._live.sandbox.id
    subprocess.run(["docker", "rm", "-f", "-v", f"praisonai_{old}"], capture_output=True, check=True)
    monkeypatch.setattr("praisonai.managed.live._session.RECHECK_AFTER_S", 0.0)
    assert agent.run("still there?").text == "noted"
    (replaced,) = [e for e in stored(agent) if e.type == "sandbox.replaced"]
    assert replaced.data["previous_instance_id"] == old and replaced.data["instance_id"] != old
    assert "was lost and replaced" in json.dumps(llm.requests[-1]["messages"])


def test_env_values_reach_the_instance_but_never_the_store(make: Make, llm: ScriptedLLM, home: Path) -> None:
    check = 'test "${#API_TOKEN}" = 12 && echo same'  # the value itself stays off the transcript
    llm.set_script([reply(tool("execute_command", command=check)), reply("ok")])
    agent = make("local", env={"API_TOKEN": "s3cret-value"})
    agent.run("compare")
    (result,) = [e for e in stored(agent) if e.type == "agent.tool_result"]
    assert result.text.strip() == "same"
    agent.close()
    for path in (home / "managed").iterdir():  # the database and its WAL
        assert b"s3cret-value" not in path.read_bytes(), path
    record = agent.retrieve_session()
    assert record is not None and record.sandbox is not None and record.sandbox["env"] == ["API_TOKEN"]


def test_provision_compute_takes_praisonais_fields_for_the_first_instance(make: Make) -> None:
    """PraisonAI's examples call ``provision_compute(idle_timeout_s=120)`` (and ``image=``, ``cpu=``…)
    before the first turn: the fields make that instance; a wrong one, or fields once the session
    has its instance, is one sentence and changes nothing."""
    managed = make("local")
    with pytest.raises(ConfigError, match="idle_timeout_s"):
        _portal.call(lambda: managed.provision_compute(idle_timeout_s=-1))
    assert managed.session_id is None  # refused before any session was made
    _portal.call(lambda: managed.provision_compute(idle_timeout_s=120, env={"MODE": "praisonai"}))
    assert _portal.call(managed.execute_in_compute, 'echo "$MODE"').stdout == "praisonai\n"
    live = managed._live
    assert live is not None and live.sandbox is not None
    assert live.sandbox.plan is not None and live.sandbox.plan.config.idle_timeout_s == 120
    with pytest.raises(ConfigError, match="already has an instance"):
        _portal.call(lambda: managed.provision_compute(cpu=2))


@pytest.mark.usefixtures("docker_ok")
def test_compute_methods_awaited_on_the_users_loops_share_one_instance(make: Make, llm: ScriptedLLM) -> None:
    """PraisonAI's examples await ``provision_compute``/``execute_in_compute`` inside their own
    ``asyncio.run`` and call the synchronous ``agent.start`` there too (examples/environment_yaml.py):
    the instance lives on praisonai's loop, so it outlives the user's loop and a synchronous turn
    inside that loop does not wait on it."""
    from praisonai import Agent

    llm.set_script([reply(tool("write_file", path="report.txt", content="seen")), reply("written")])
    managed = make("docker")
    agent = Agent(name="coder", backend=managed)

    async def first() -> None:
        await managed.provision_compute()
        assert agent.start("write the report") == "written"
        assert (await managed.execute_in_compute("echo here > /tmp/mark")).exit_code == 0

    async def second() -> str:
        return (await managed.execute_in_compute("cat /tmp/mark report.txt")).stdout

    asyncio.run(first())
    assert asyncio.run(second()).split() == ["here", "seen"]  # a new loop, the same instance
    asyncio.run(managed.shutdown_compute())
