"""ManagedAgent's ``workspace=``/``repo=`` and ``resources`` on real docker, the model scripted:
the tree is in the instance before the first model request, the session records the resources
(names, no secret) so a replacement instance gets them again, and a bad resource is one
sentence before any model request."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from praisonai._errors import ConfigError
from praisonai.compute.providers.docker._client import container_name
from praisonai.llm.testing import API_KEY, ScriptedLLM, reply, tool
from praisonai.managed import ManagedAgent
from praisonai.managed.sessions import delete_session, session_diff

Make = Callable[..., ManagedAgent]


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        yield server


@pytest.fixture
def make(home: Path, llm: ScriptedLLM) -> Iterator[Make]:
    made: list[ManagedAgent] = []

    def build(config: dict[str, Any] | None = None, **keywords: Any) -> ManagedAgent:
        fields = {"model": "gpt-4o-mini", "environment": False, **(config or {})}
        agent = ManagedAgent(
            compute="docker", config=fields, api_key=API_KEY, base_url=f"{llm.url}/v1", **keywords
        )
        made.append(agent)
        return agent

    yield build
    for agent in made:
        agent.close()
        if agent.session_id is not None:
            with contextlib.suppress(LookupError):
                delete_session(agent.session_id)


@pytest.mark.usefixtures("docker_ok")
def test_the_workspace_is_there_before_the_first_request_and_survives_a_replacement(
    make: Make, llm: ScriptedLLM, tmp_path: Path
) -> None:
    (tmp_path / "todo.txt").write_text("one\n")
    llm.set_script([
        reply(tool("execute_command", command="cat todo.txt && echo two >> todo.txt")),
        reply("appended"),
    ])  # fmt: skip
    agent = make(workspace=tmp_path)
    assert agent.config.resources[0].type == "local_directory"
    agent.run("append two")
    assert "one" in str(llm.requests[1]["messages"][-1]["content"])
    assert agent.session_id is not None
    assert "+two\n" in session_diff(agent.session_id)
    record = agent.retrieve_session()
    assert record is not None and record.sandbox is not None
    assert record.sandbox["resources"] == [
        {"type": "local_directory", "path": str(tmp_path), "mount_path": None}
    ]
    agent.close()
    lost = container_name(record.sandbox["instance_id"])  # removed behind its back: a resume replaces it
    subprocess.run(["docker", "rm", "-f", "-v", lost], capture_output=True, check=True)
    llm.set_script([reply(tool("execute_command", command="cat todo.txt")), reply("ok")])
    with ManagedAgent.resume(agent.session_id, api_key=API_KEY, base_url=f"{llm.url}/v1") as again:
        again.run("show it")
    assert "one" in str(llm.requests[-1]["messages"][-1]["content"])  # uploaded again, not empty


def test_a_missing_directory_in_the_config_is_one_sentence_before_any_request(
    make: Make, llm: ScriptedLLM, tmp_path: Path, docker_ok: None
) -> None:
    agent = make({"resources": [{"type": "local_directory", "path": str(tmp_path / "gone")}]})
    with pytest.raises(ConfigError, match="does not exist; give an existing directory"):
        agent.run("hi")
    assert llm.requests == []


def test_hosted_refuses_a_workspace_in_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="with provider='anthropic' give the session's resources"):
        ManagedAgent(
            provider="anthropic", config={"model": "claude-sonnet-4-5"}, workspace=tmp_path, api_key="k"
        )
