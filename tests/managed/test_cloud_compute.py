"""``ManagedAgent(compute="daytona")`` and ``AgentTeam(compute="e2b")``: how users reach the cloud
providers. The model is the scripted server, the vendor is its wire fake (the real SDK talks to it,
docker containers behind it), pointed at by the SDK's own variables."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from praisonai import _portal
from praisonai.llm.testing import API_KEY, ScriptedLLM, reply, tool
from praisonai.managed import ManagedAgent
from praisonai.managed.sessions import delete_session

pytestmark = pytest.mark.usefixtures("docker_ok", "home", "collect_sdk_garbage")


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        yield server


def test_a_managed_agent_runs_its_tools_on_daytona(llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("daytona")
    from fakes.daytona import DaytonaFake

    from praisonai.compute.providers.daytona import DaytonaCompute

    with DaytonaFake() as fake:
        monkeypatch.setenv("DAYTONA_API_KEY", "fake-key")
        monkeypatch.setenv("DAYTONA_API_URL", fake.api_url)
        llm.set_script([
            reply(tool("write_file", path="fib.py", content="print(6765)\n")),
            reply(tool("execute_command", command="python3 fib.py; echo err >&2; exit 3")),
            reply("fib(20) is 6765"),
        ])  # fmt: skip
        agent = ManagedAgent(compute="daytona", config={"model": "gpt-4o-mini", "environment": False},
                             api_key=API_KEY, base_url=f"{llm.url}/v1")  # fmt: skip
        try:
            assert agent.start("Write fib.py and run it") == "fib(20) is 6765"
            assert agent.last_result is not None and agent.last_result.stop_reason == "end_turn"
            answer = llm.requests[2]["messages"][-1]["content"]
            assert "6765" in answer and "err" in answer and "3" in answer, answer
            assert [i.instance_id for i in _portal.call(DaytonaCompute().list_instances)], (
                "no sandbox was made"
            )
        finally:
            agent.close()
            if agent.session_id is not None:
                delete_session(agent.session_id)
        assert _portal.call(DaytonaCompute().list_instances) == [], "the session's sandbox was left behind"


def test_a_team_shares_one_e2b_sandbox(llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("e2b")
    from fakes.e2b import E2BFake

    from praisonai import Agent, AgentTeam
    from praisonai.compute.providers.e2b import E2BCompute

    with E2BFake() as fake:
        for key, value in fake.env().items():
            monkeypatch.setenv(key, value)
        llm.set_script([
            reply(tool("write_file", path="notes.md", content="shared\n")), reply("wrote it"),
            reply(tool("read_file", path="notes.md")), reply("read it"),
        ])  # fmt: skip
        writer, reader = (
            Agent(name, api_key=API_KEY, base_url=f"{llm.url}/v1") for name in ("writer", "reader")
        )
        AgentTeam([writer, reader], compute="e2b").start("write notes.md, then read it")
        assert "shared" in str(llm.requests[3]["messages"][-1]["content"]), "the reader saw another instance"
        assert _portal.call(E2BCompute().list_instances) == [], "the team's sandbox was left behind"
