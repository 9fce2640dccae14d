"""The agent loop against a scripted LLM, through the real openai and anthropic clients."""

from __future__ import annotations

import json
from collections.abc import Callable

import anyio
import pytest

from praisonai._errors import AuthenticationError, ConfigError, ProviderUnavailableError
from praisonai.agents import Agent, Usage
from praisonai.llm.testing import Reply, ScriptedLLM, reply, tool
from praisonai.llm.types import OLLAMA_BASE_URL, resolve_model


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first.
        b: the second.
    """
    return a + b


def fail(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(reason)


MakeAgent = Callable[..., Agent]


def _calc(make_agent: MakeAgent) -> Agent:
    return make_agent("calc", "You add.", tools=[add, fail])


def test_tool_round_trip_openai(llm: ScriptedLLM, make_agent: MakeAgent) -> None:
    llm.set_script([reply("thinking", tool("add", a=2, b=3)), reply("5")])
    agent = _calc(make_agent)
    assert agent.start("2+3?") == "5"
    first, second = llm.requests
    assert first["model"] == "gpt-4o-mini"
    assert first["messages"][:2] == [
        {"role": "system", "content": "You add."},
        {"role": "user", "content": "2+3?"},
    ]
    assert [t["function"]["name"] for t in first["tools"]] == ["add", "fail"]
    assert first["tools"][0]["function"]["parameters"]["required"] == ["a", "b"]
    call_id = second["messages"][2]["tool_calls"][0]["id"]
    assert second["messages"][3] == {"role": "tool", "tool_call_id": call_id, "content": "5"}


def test_tool_round_trip_anthropic(llm: ScriptedLLM, make_agent: MakeAgent) -> None:
    llm.set_script([reply(tool("add", a=2, b=3), tool("add", a=1, b=1)), reply("5 and 2")])
    agent = make_agent("calc", "You add.", model="anthropic/claude-x", tools=[add])
    assert agent.start("sums?") == "5 and 2"
    assert llm.paths == ["/v1/messages", "/v1/messages"]
    first, second = llm.requests
    assert (first["model"], first["system"]) == ("claude-x", "You add.")
    assert first["tools"][0]["input_schema"]["properties"]["a"]["type"] == "integer"
    results = second["messages"][2]  # both results in one user turn
    assert results["role"] == "user"
    assert [b["content"] for b in results["content"]] == ["5", "2"]
    assert agent.usage == Usage(20, 10, 2)


def test_tool_error_goes_back_as_text(llm: ScriptedLLM, make_agent: MakeAgent) -> None:
    llm.set_script([reply(tool("fail", reason="disk full")), reply(tool("nope")), reply("sorry")])
    assert _calc(make_agent).start("go") == "sorry"
    assert llm.requests[1]["messages"][-1]["content"] == "Error: RuntimeError: disk full"
    assert llm.requests[2]["messages"][-1]["content"].startswith("Error: no tool named 'nope'")


def test_usage_is_summed_across_runs(llm: ScriptedLLM, make_agent: MakeAgent) -> None:
    first = reply(tool("add", a=1, b=1), input_tokens=100, output_tokens=7)
    llm.set_script([first, reply("2", input_tokens=120), reply("x")])
    agent = _calc(make_agent)
    agent.start("1+1")
    assert agent.usage == Usage(input_tokens=220, output_tokens=12, requests=2)
    agent.start("again")
    assert agent.usage == Usage(230, 17, 3)
    assert agent.usage.total_tokens == 247


def test_max_iter_bounds_the_loop(llm: ScriptedLLM, make_agent: MakeAgent) -> None:
    calls: list[int] = []

    def count() -> str:
        """Count."""
        calls.append(1)
        return "again"

    llm.set_script(lambda path, body: reply(f"turn {len(llm.requests)}", tool("count")))
    agent = make_agent("looper", tools=[count], max_iter=3)
    assert agent.start("go") == "turn 3"
    assert len(llm.requests) == 3
    assert len(calls) == 2  # the last turn's call is not run
    llm.set_script(lambda path, body: reply(tool("count")))
    assert "stopped after max_iter=3" in agent.start("go")


def test_sync_call_inside_a_running_event_loop(llm: ScriptedLLM, make_agent: MakeAgent) -> None:
    llm.set_script([reply(tool("add", a=1, b=2)), reply("3")])
    agent = _calc(make_agent)

    async def main() -> str:
        return agent.start("1+2")  # blocks this loop; the work runs on praisonai's portal loop

    assert anyio.run(main) == "3"  # (pytest-timeout catches a deadlock)


def test_async_and_tools_in_threads(llm: ScriptedLLM, make_agent: MakeAgent) -> None:
    import threading

    seen: list[str] = []

    def where() -> str:
        """Report the thread."""
        seen.append(threading.current_thread().name)
        return "ok"

    async def awhere() -> str:
        """Report the loop thread."""
        return threading.current_thread().name

    llm.set_script([reply(tool("where"), tool("awhere")), reply("done")])
    agent = make_agent("t", tools=[where, awhere])
    assert anyio.run(agent.astart, "go") == "done"
    assert seen and seen[0] != threading.current_thread().name  # sync tool ran in a worker thread
    assert llm.requests[1]["messages"][-1]["content"] == threading.current_thread().name


def test_chat_keeps_the_conversation_start_does_not(llm: ScriptedLLM, make_agent: MakeAgent) -> None:
    llm.set_script([reply("hi"), reply("again"), reply("fresh")])
    agent = _calc(make_agent)
    agent.chat("one")
    agent.chat("two")
    assert [m["content"] for m in llm.requests[1]["messages"][1:]] == ["one", "hi", "two"]
    agent.start("three")
    assert [m["content"] for m in llm.requests[2]["messages"][1:]] == ["three"]


def test_tools_are_read_afresh_and_client_reused(llm: ScriptedLLM, make_agent: MakeAgent) -> None:
    def add(a: int, b: int) -> int:  # same name, different behaviour (as SharedCompute swaps tools)
        """Add, remotely."""
        return 1000

    llm.set_script([reply(tool("add", a=1, b=1)), reply("a"), reply(tool("add", a=1, b=1)), reply("b")])
    agent = _calc(make_agent)
    agent.start("x")
    client = agent._client
    agent.tools[0] = add
    agent.instructions = "New prompt."
    agent.start("y")
    assert llm.requests[1]["messages"][-1]["content"] == "2"
    assert llm.requests[3]["messages"][-1]["content"] == "1000"
    assert llm.requests[3]["messages"][0]["content"] == "New prompt."
    assert llm.requests[2]["tools"][0]["function"]["description"] == "Add, remotely."
    assert agent._client is client  # one SDK client, reused


def test_instructions_from_role_goal_backstory() -> None:
    agent = Agent("ada", role="a reviewer", goal="find bugs", backstory="You are thorough.")
    assert agent.instructions == "You are ada, a reviewer. Your goal: find bugs"
    assert agent.system_prompt == "You are ada, a reviewer. Your goal: find bugs\n\nYou are thorough."
    assert Agent("b", "Do X.", backstory="Y.").system_prompt == "Do X.\n\nY.", "backstory comes after"
    assert agent.tools == [] and agent.backend is None


def test_missing_api_key_names_the_env_var(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        Agent("a").start("hi")
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        Agent("a", model="anthropic/claude-sonnet-4-5").start("hi")


def test_keys_reach_the_endpoint(
    llm: ScriptedLLM, make_agent: MakeAgent, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "from-env")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "anthropic-env")
    llm.set_script([reply("ok")] * 3)
    make_agent("a", api_key=None).start("hi")
    make_agent("b", api_key="explicit").start("hi")
    make_agent("c", model="anthropic/claude-x", api_key=None).start("hi")
    assert llm.api_keys == ["from-env", "explicit", "anthropic-env"]


def test_one_client_for_sync_and_async_calls_and_close(llm: ScriptedLLM, make_agent: MakeAgent) -> None:
    llm.set_script([reply("ok")] * 4)
    agent = make_agent("a")
    assert anyio.run(agent.astart, "on a loop of its own") == "ok"
    client = agent._client
    assert agent.start("sync") == "ok" and agent._client is client
    agent.close()
    agent.close()  # idempotent
    assert agent._client is None
    assert agent.start("again") == "ok" and agent._client not in (None, client)

    async def scoped() -> str:
        async with agent:
            return await agent.achat("scoped")

    assert anyio.run(scoped) == "ok" and agent._client is None


def test_unknown_prefix_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="known prefixes: openai, anthropic, ollama"):
        Agent("a", model="mystery/model-1")


def test_model_strings() -> None:
    assert resolve_model("gpt-4o-mini").model == "gpt-4o-mini"
    assert resolve_model("openai/gpt-4o").model == "gpt-4o"
    ollama = resolve_model("ollama/llama3.1")
    assert (ollama.provider, ollama.model, ollama.base_url, ollama.key_required) == (
        "openai", "llama3.1", OLLAMA_BASE_URL, False,
    )  # fmt: skip
    routed = resolve_model("meta-llama/llama-3-8b", base_url="http://x/v1")
    assert (routed.provider, routed.model) == ("openai", "meta-llama/llama-3-8b")
    claude = resolve_model("anthropic/claude-3-5-haiku")
    assert (claude.provider, claude.model) == ("anthropic", "claude-3-5-haiku")
    assert "sk-secret" not in repr(resolve_model("gpt-4o", api_key="sk-secret"))


def test_exhausted_script_is_a_clear_error(llm: ScriptedLLM, make_agent: MakeAgent) -> None:
    with pytest.raises(Exception, match="script is exhausted"):
        _calc(make_agent).start("hi")


def test_scripted_server_records_json(llm: ScriptedLLM, make_agent: MakeAgent) -> None:
    llm.set_script([Reply(text="x")])
    _calc(make_agent).start("hi")
    assert json.dumps(llm.requests[0])  # plain JSON values


def test_sdk_errors_become_ours(make_agent: MakeAgent) -> None:
    with ScriptedLLM(require_key="right") as strict:
        for model, endpoint in (
            ("gpt-4o", strict.openai_kwargs()),
            ("anthropic/c", strict.anthropic_kwargs()),
        ):
            with pytest.raises(AuthenticationError, match="refused the API key"):
                make_agent("a", model=model, **{**endpoint, "api_key": "wrong"}).start("hi")
        unused = strict.url
    with pytest.raises(ProviderUnavailableError, match="model 'gpt-4o' at http://127"):
        make_agent("a", model="gpt-4o", base_url=f"{unused}/v1").start("hi")  # nothing listens there now


def test_anthropic_chat_history_on_the_wire(llm: ScriptedLLM, make_agent: MakeAgent) -> None:
    llm.set_script([reply("hello", tool("add", a=1, b=2)), reply(""), reply("bye")])
    agent = make_agent("a", "Be brief.", model="anthropic/claude-x", tools=[add])
    assert agent.chat("hi") == ""
    assert agent.chat("and now?") == "bye"
    turns = llm.requests[2]["messages"]
    assert [t["role"] for t in turns] == ["user", "assistant", "user", "assistant", "user"]
    assert turns[1]["content"][0] == {"type": "text", "text": "hello"}
    assert turns[3]["content"] == [{"type": "text", "text": "(no reply)"}]  # never an empty turn
