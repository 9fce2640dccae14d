"""Agents with a scripted model, their tools on one shared docker instance: the real openai client
talks to a scripted OpenAI-compatible server on 127.0.0.1; the tools run for real."""

from __future__ import annotations

import json

import pytest

from praisonai import _portal
from praisonai._errors import InstanceNotFoundError
from praisonai.agents import Agent
from praisonai.compute.providers.docker import DockerCompute
from praisonai.llm.testing import ScriptedLLM, reply, tool
from praisonai.managed import CAPABILITY_PROMPT, SharedCompute

pytestmark = pytest.mark.usefixtures("docker_ok")

CONTENT = "first line\n  indented 'quoted' $VAR ✓\nlast line without newline"


def test_agent_a_writes_agent_b_reads_it_back_byte_exact() -> None:
    script = [
        reply(tool("write_file", path="shared/note.txt", content=CONTENT)),
        reply("written"),
        reply(tool("read_file", path="shared/note.txt")),
        reply("read it"),
    ]
    with ScriptedLLM(script) as llm:
        writer = Agent("writer", "You write files.", **llm.openai_kwargs())
        reader = Agent("reader", "You read files.", **llm.openai_kwargs())
        try:
            with SharedCompute(DockerCompute(), environment=False) as shared:
                shared.attach([writer, reader])
                assert writer.start("write the note") == "written"
                assert reader.start("read the note") == "read it"
                instance_id = shared.instance_id
            requests = [json.dumps(r) for r in llm.requests]
        finally:
            writer.close()
            reader.close()
    # the reader's tool result (in its second request) is the writer's content, byte-exact
    tool_results = [m for m in llm.requests[3]["messages"] if m.get("role") == "tool"]
    assert tool_results[-1]["content"] == CONTENT
    assert all(r.count(CAPABILITY_PROMPT) == 1 for r in requests), "the note must be there once, every call"
    assert writer.backstory is None and [t.__name__ for t in writer.tools] == []  # restored
    with pytest.raises(InstanceNotFoundError):
        _portal.call(DockerCompute().get_status, instance_id)
