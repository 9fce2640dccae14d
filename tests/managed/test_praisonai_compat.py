"""Our providers as the compute of PraisonAI's own SDK: praisonaiagents' SharedCompute (what its
AgentTeam(tools_run_on=...) uses) drives our DockerCompute end to end."""

from __future__ import annotations

import pytest

from praisonai import _portal
from praisonai._errors import InstanceNotFoundError
from praisonai.compute.lifecycle import owner_tag
from praisonai.compute.providers.docker import DockerCompute

pytestmark = pytest.mark.usefixtures("docker_ok")


def test_praisonaiagents_shared_compute_runs_on_our_docker_provider() -> None:
    shared_compute = pytest.importorskip("praisonaiagents.managed.shared_compute")
    provider = DockerCompute()
    with shared_compute.SharedCompute(provider) as shared:
        tools = {t.__name__: t for t in shared.build_tools()}
        assert tools["execute_command"]("echo hi; pwd") == "hi\n/workspace"
        assert tools["write_file"]("notes/a.txt", "it's\nexact") == "Wrote notes/a.txt"
        assert tools["read_file"]("notes/a.txt") == "it's\nexact"
        assert tools["execute_command"]("echo err >&2; exit 3") == "Error (exit 3): err"
        instance_id = shared.instance_id
    with pytest.raises(InstanceNotFoundError):
        _portal.call(provider.get_status, instance_id)


def test_praisonaiagents_agent_team_runs_its_tools_on_our_docker_provider(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """PraisonAI's AgentTeam(tools_run_on=<our DockerCompute>) end to end; its model is our
    scripted OpenAI-compatible server (through litellm, which praisonaiagents' [llm] extra brings)."""
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no fetch from GitHub at import
    pytest.importorskip("litellm")
    agents = pytest.importorskip("praisonaiagents")
    from praisonai.llm.testing import ScriptedLLM, reply, tool

    monkeypatch.setenv("PRAISONAI_AUTO_APPROVE", "1")  # its approval prompt would wait for a human
    script = [
        reply(tool("write_file", path="note.txt", content="from the writer")),
        reply("written"),
        reply(tool("read_file", path="note.txt")),
        reply("read"),
    ]
    provider = DockerCompute()
    with ScriptedLLM(script) as llm:
        endpoint = llm.openai_kwargs()
        made = [
            agents.Agent(name=name, instructions=name, model="hosted_vllm/scripted", **endpoint)
            for name in ("writer", "reader")
        ]
        tasks = [agents.Task(description=f"{a.name} the note", agent=a, expected_output="done") for a in made]
        agents.AgentTeam(agents=made, tasks=tasks, tools_run_on=provider).start()
        results = [
            m["content"] for r in llm.requests for m in r.get("messages", []) if m.get("role") == "tool"
        ]
    assert results == ['"Wrote note.txt"', '"from the writer"']
    mine = [
        i for i in _portal.call(provider.list_instances) if i.labels.get("praisonai.owner") == owner_tag()
    ]
    assert not mine, "the team left its instance behind"
