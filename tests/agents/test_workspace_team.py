"""``AgentTeam``/``AgentFlow(workspace=…, repo=…)`` on real docker: the tree is in the shared
instance before the first agent runs, and the result's ``diff`` holds what the agents changed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from praisonai._errors import ConfigError
from praisonai.agents import Agent, AgentFlow, AgentTeam
from praisonai.llm.testing import ScriptedLLM, reply, tool

MakeAgent = Callable[..., Agent]


def test_a_team_edits_the_uploaded_tree_and_returns_the_diff(
    docker_ok: None, llm: ScriptedLLM, make_agent: MakeAgent, tmp_path: Path
) -> None:
    (tmp_path / "notes.md").write_text("draft\n")
    (tmp_path / ".gitignore").write_text("cache/\n")
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "big.bin").write_bytes(b"\0" * 1000)
    llm.set_script([
        reply(tool("execute_command", command="ls -A | grep -v baseline")),
        reply(tool("write_file", path="notes.md", content="final\n")),
        reply("done"),
    ])  # fmt: skip
    team = AgentTeam([make_agent("editor", "You edit.")], compute="docker", workspace=tmp_path)
    result = team.start("finish the notes")
    listing = llm.requests[1]["messages"][-1]["content"]
    assert ".gitignore" in listing and "notes.md" in listing and "cache" not in listing
    assert result.diff is not None and "-draft\n+final\n" in result.diff
    assert (tmp_path / "notes.md").read_text() == "draft\n"


def test_a_flow_without_compute_refuses_a_workspace(make_agent: MakeAgent, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="AgentFlow's workspace needs compute="):
        AgentFlow([make_agent("a", "You are a.")], workspace=tmp_path)
    with pytest.raises(ConfigError, match="does not exist"):
        AgentTeam([make_agent("a", "You are a.")], compute="docker", workspace=tmp_path / "missing")
