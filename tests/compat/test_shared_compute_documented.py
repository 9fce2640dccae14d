"""SharedCompute as PraisonAI documents it, written as its users write it: CAPABILITY_PROMPT on each
attached agent's backstory (once in the system prompt, gone after shutdown), BRIDGED_TOOL_NAMES,
and an object that is usable again after shutdown (a new instance on the next use). Real local
instances; the model is the scripted server driven by the real SDK."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from praisonai import Agent, SharedCompute, _portal
from praisonai._errors import InstanceNotFoundError
from praisonai.compute.providers.local import LocalCompute
from praisonai.llm.testing import ScriptedLLM, reply
from praisonai.managed import BRIDGED_TOOL_NAMES, CAPABILITY_PROMPT


class CountingLocal(LocalCompute):
    """The real local provider, counting its provisions."""

    def __init__(self) -> None:
        super().__init__()
        self.provisions = 0

    async def provision(self, config: object = None) -> Any:
        self.provisions += 1
        return await super().provision(config)


def gone(provider: LocalCompute, instance_id: str) -> bool:
    try:
        _portal.call(provider.get_status, instance_id)
    except InstanceNotFoundError:
        return True
    return False


def test_the_capability_prompt_is_in_the_system_prompt_once_and_restored_exactly() -> None:
    with ScriptedLLM([reply("noted"), reply("again")]) as llm:
        agent = Agent(
            name="writer",
            role="Writer",
            goal="Write notes",
            backstory="You write tidy notes.",
            **llm.openai_kwargs(),
        )
        before = (agent.instructions, agent.backstory, agent.system_prompt)
        try:
            with SharedCompute("local", environment=False) as shared:
                shared.attach([agent])
                shared.attach([agent])  # attached once, however often it is asked
                assert agent.backstory == f"You write tidy notes.\n\n{CAPABILITY_PROMPT}"
                assert agent.start("note it") == "noted"
            assert (agent.instructions, agent.backstory, agent.system_prompt) == before
            assert agent.start("again") == "again"
        finally:
            agent.close()
    during, after = (r["messages"][0]["content"] for r in llm.requests)
    assert during == f"{before[2]}\n\n{CAPABILITY_PROMPT}"
    assert during.count(CAPABILITY_PROMPT) == 1 and after == before[2]
    assert "You write tidy notes." in after and "Writer" in after


def test_the_bridged_tool_names_are_the_tools_an_agent_gets() -> None:
    shared = SharedCompute("local", environment=False)
    assert tuple(t.__name__ for t in shared.build_tools()) == BRIDGED_TOOL_NAMES
    assert shared.instance_id is None, "building the tools does not provision"


def test_after_shutdown_the_next_use_provisions_a_new_instance(home: Path) -> None:
    def custom_tool(x: str) -> str:
        return x

    provider = CountingLocal()
    agent = Agent(name="coder", instructions="You code.", tools=[custom_tool], api_key="k")
    shared = SharedCompute(provider, environment=False)
    try:
        shared.attach([agent])
        run = next(t for t in agent.tools if t.__name__ == "execute_command")
        assert run("echo kept > first.txt; echo written") == "written"
        first = shared.instance_id
        shared.shutdown()
        assert shared.instance_id is None and first is not None and gone(provider, first)
        assert (agent.tools, agent.backstory, agent.system_prompt) == ([custom_tool], None, "You code.")
        shared.shutdown()  # idempotent

        shared.attach([agent])  # attach and restore work again on the reused object
        execute_command = shared.build_tools()[0]
        start, outputs = threading.Barrier(8), []

        def first_call() -> None:
            start.wait()
            outputs.append(execute_command("cat first.txt 2>/dev/null || echo fresh"))

        threads = [threading.Thread(target=first_call) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert outputs == ["fresh"] * 8, "a new instance, without the first one's files"
        assert provider.provisions == 2, "concurrent first use after a reuse provisions once"
        second = shared.instance_id
        assert second is not None and second != first
        assert next(t for t in agent.tools if t.__name__ == "execute_command")("echo again") == "again"
        failed = "echo out; echo err >&2; exit 3"
        assert (
            shared._format(shared.run_command(failed))
            == execute_command(failed)
            == "Error (exit 3): out\nerr"
        )
    finally:
        shared.shutdown()
    assert gone(provider, second)
    assert (agent.tools, agent.backstory, agent.system_prompt) == ([custom_tool], None, "You code.")
