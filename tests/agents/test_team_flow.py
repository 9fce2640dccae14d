"""AgentTeam and AgentFlow: data passing, concurrency, patterns, agent discovery."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from praisonai._errors import ConfigError
from praisonai.agents import Agent, AgentFlow, AgentOutput, AgentTeam, loop, parallel, repeat, route, when
from praisonai.llm.testing import Reply, ScriptedLLM, reply, tool

MakeAgent = Callable[..., Agent]


def _who(body: dict[str, Any]) -> str:
    """The agent a request comes from (its system prompt is 'You are NAME.')."""
    return str(body["messages"][0]["content"]).removeprefix("You are ").rstrip(".")


def _last_user(body: dict[str, Any]) -> str:
    return str(body["messages"][-1]["content"])


def _echo(path: str, body: dict[str, Any]) -> Reply:
    """Each agent answers '<name>(<its input>)'."""
    return reply(f"{_who(body)}({_last_user(body)})")


def test_sequential_team_passes_context(llm: ScriptedLLM, make_agent: MakeAgent) -> None:
    llm.set_script([reply("draft v1"), reply("reviewed: ok")])
    writer, reviewer = make_agent("writer", "You are writer."), make_agent("reviewer", "You are reviewer.")
    result = AgentTeam([writer, reviewer], tasks=["write", "review"]).start("A poem")
    assert result.text == str(result) == "reviewed: ok"
    assert result.outputs == (AgentOutput("writer", "draft v1"), AgentOutput("reviewer", "reviewed: ok"))
    assert _last_user(llm.requests[0]) == "A poem\n\nYour task: write"
    second = _last_user(llm.requests[1])
    assert second.startswith("A poem\n\nYour task: review")
    assert "Context from the previous agent (writer):\ndraft v1" in second


def test_parallel_team_runs_concurrently(llm: ScriptedLLM, make_agent: MakeAgent) -> None:
    barrier = threading.Barrier(3, timeout=10)  # every agent's request must be in flight at once

    def script(path: str, body: dict[str, Any]) -> Reply:
        barrier.wait()
        return _echo(path, body)

    llm.set_script(script)
    team = AgentTeam([make_agent(n, f"You are {n}.") for n in ("a", "b", "c")], process="parallel")
    result = anyio.run(team.astart, "x")
    assert [o.text for o in result.outputs] == ["a(x)", "b(x)", "c(x)"]
    assert result.text == "## a\na(x)\n\n## b\nb(x)\n\n## c\nc(x)"


def test_team_rejects_bad_configuration(llm: ScriptedLLM, make_agent: MakeAgent) -> None:
    a = make_agent("a", "You are a.")
    with pytest.raises(ConfigError, match="one per agent"):
        AgentTeam([a], tasks=["x", "y"])
    with pytest.raises(ConfigError, match="unknown process"):
        AgentTeam([a], process="random")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="prompt, tasks"):
        AgentTeam([a]).start()


def test_flow_route_parallel_repeat_when(llm: ScriptedLLM, make_agent: MakeAgent) -> None:
    llm.set_script(_echo)
    classify, bug, feature, r1, r2, editor, deployer = (
        make_agent(n, f"You are {n}.")
        for n in ("classify", "bug", "feature", "r1", "r2", "editor", "deployer")
    )
    flow = AgentFlow(
        [
            classify,
            route({"bug": [bug], "feature": feature}),
            parallel([r1, r2]),
            repeat(editor, until=lambda t: t.count("editor") >= 2, max_iterations=5),
            when("deploy", then=deployer, else_=lambda t: f"skipped({t})"),
        ]
    )
    result = flow.start("bug report")
    after_route = "bug(classify(bug report))"
    joined = f"r1({after_route})\n\nr2({after_route})"
    assert result.text == f"skipped(editor(editor({joined})))"
    assert [o.agent for o in result.outputs][:2] == ["classify", "bug"]
    assert sorted(o.agent for o in result.outputs[2:4]) == ["r1", "r2"]
    assert [o.agent for o in result.outputs[4:]] == ["editor", "editor"]


def test_route_default_key_and_pass_through(llm: ScriptedLLM, make_agent: MakeAgent) -> None:
    llm.set_script(_echo)
    a, b = make_agent("a", "You are a."), make_agent("b", "You are b.")
    assert AgentFlow([route({"yes": a}, default=b)]).start("no").text == "b(no)"
    assert AgentFlow([route({"yes": a})]).start("no").text == "no"
    assert AgentFlow([route({"k1": a, "k2": b}, key=lambda t: "k2")]).start("k1").text == "b(k1)"
    assert AgentFlow([when(lambda t: t == "go", then=a)]).start("stop").text == "stop"


def test_repeat_stops_at_max_iterations() -> None:
    runs: list[str] = []

    def step(text: str) -> str:
        runs.append(text)
        return text + "!"

    assert AgentFlow([repeat(step, until=lambda t: False, max_iterations=3)]).start("x").text == "x!!!"
    assert runs == ["x", "x!", "x!!"]
    with pytest.raises(ConfigError):
        repeat(step, until=lambda t: True, max_iterations=0)


def test_loop_over_items_and_lines(llm: ScriptedLLM, make_agent: MakeAgent) -> None:
    llm.set_script(_echo)
    a = make_agent("a", "You are a.")
    assert AgentFlow([loop(a)]).start("one\n\ntwo").text == "a(one)\na(two)"
    assert AgentFlow([loop(a, items=["p", "q"], parallel=True)]).start().text == "a(p)\na(q)"

    async def upper(text: str) -> str:
        return text.upper()

    assert AgentFlow([loop(upper, items=["p", "q"])]).start().text == "P\nQ"


def test_flow_finds_every_agent_once_in_first_seen_order(llm: ScriptedLLM, make_agent: MakeAgent) -> None:
    a, b, c, d, e, f = (make_agent(n, f"You are {n}.") for n in "abcdef")
    flow = AgentFlow(
        [
            a,
            route({"x": [b, a], "y": parallel([c, when("z", then=d, else_=b)])}, default=e),
            repeat(loop(f), until=lambda t: True),
            a,
            lambda t: t,
        ]
    )
    assert [agent.name for agent in flow.agents] == ["a", "b", "c", "d", "e", "f"]
    assert AgentTeam([a, b]).agents == [a, b]


def test_not_a_step_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="not a flow step"):
        AgentFlow([42]).start("x")  # type: ignore[list-item]


def _tool_script(steps: dict[str, list[Reply]]) -> Any:
    """Each agent (by name) plays its own list of replies, whatever the interleaving."""
    lock = threading.Lock()

    def script(path: str, body: dict[str, Any]) -> Reply:
        with lock:
            return steps[_who(body).split(".")[0]].pop(0)

    return script


def test_team_with_compute_shares_one_instance(llm: ScriptedLLM, make_agent: MakeAgent, home: Any) -> None:
    pytest.importorskip("praisonai.managed")
    content = "line 1\nno newline at the end"
    llm.set_script(
        _tool_script(
            {
                "writer": [reply(tool("write_file", path="notes.txt", content=content)), reply("written")],
                "reader": [reply(tool("read_file", path="notes.txt")), reply("read")],
            }
        )
    )
    writer, reader = make_agent("writer", "You are writer."), make_agent("reader", "You are reader.")
    own_tools = [lambda: "mine"]
    writer.tools = list(own_tools)
    result = AgentTeam([writer, reader], compute="local").start("share a note")
    assert result.text == "read"
    reader_requests = [b for b in llm.requests if _who(b).startswith("reader")]
    assert reader_requests[-1]["messages"][-1]["content"] == content  # byte-exact across agents
    assert "remote Linux instance" in reader_requests[0]["messages"][0]["content"]
    tools = {t["function"]["name"] for t in reader_requests[0]["tools"]}
    assert {"execute_command", "read_file", "write_file", "list_files"} <= tools
    assert writer.tools == own_tools and writer.instructions == "You are writer."  # restored


def test_flow_with_compute_tears_down_when_a_step_raises(
    llm: ScriptedLLM, make_agent: MakeAgent, home: Any
) -> None:
    managed = pytest.importorskip("praisonai.managed")
    made: list[Any] = []

    class Spy(managed.SharedCompute):  # type: ignore[misc,name-defined]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    def explode(text: str) -> str:
        raise RuntimeError("step failed")

    llm.set_script([reply(tool("execute_command", command="echo hi")), reply("ok")])
    a = make_agent("a", "You are a.")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("praisonai.agents._run.SharedCompute", Spy)
        with pytest.raises(RuntimeError, match="step failed"):
            anyio.run(AgentFlow([a, explode], compute="local").astart, "go")
    assert llm.requests[1]["messages"][-1]["content"].strip() == "hi"
    (shared,) = made
    assert shared.audit and shared.instance_id is None  # a tool ran on it, then shutdown removed it
    assert a.tools == [] and a.instructions == "You are a."
