"""PraisonAI's everyday spellings around its managed agents, as its users write them (its example
files, run in test_praisonai_examples.py, use each): ``from praisonai.integrations import
LocalAgent``; ``agent.start(prompt, stream=True)``; ``flow.run``/``team.run``; its typed
``PackagesConfig``; a session record read as a dict; ``save_ids``/``restore_ids``/``update_agent``
and ``compute_provider`` on a ManagedAgent."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from praisonai._errors import ConfigError, UnsupportedFeatureError

REPO = Path(__file__).resolve().parents[2]
#: PraisonAI's managed names under praisonai.integrations (its _unified_registry) -> ours
PRAISONAI_NAMES = {
    "ManagedAgent": "ManagedAgent",
    "ManagedAgentIntegration": "ManagedAgent",
    "ManagedConfig": "ManagedConfig",
    "ManagedBackendConfig": "ManagedConfig",
    "AnthropicManagedAgent": "HostedAgent",
    "HostedAgent": "HostedAgent",
    "HostedAgentConfig": "ManagedConfig",
    "LocalManagedAgent": "ManagedAgent",
    "LocalManagedConfig": "LocalManagedConfig",
    "SandboxedAgent": "ManagedAgent",
    "SandboxedAgentConfig": "LocalManagedConfig",
    "LocalAgent": "ManagedAgent",
    "LocalAgentConfig": "LocalManagedConfig",
    "NetworkingType": "NetworkingType",
    "NetworkingConfig": "NetworkingConfig",
    "PackagesConfig": "PackagesConfig",
}


class Backend:
    """A duck-typed managed backend (PraisonAI's protocol): its answer comes in ``pieces``."""

    def __init__(self, *pieces: str) -> None:
        self.pieces, self.prompts = pieces, list[str]()

    async def execute(self, prompt: str) -> str:
        self.prompts.append(prompt)
        return "".join(self.pieces)

    def stream_text(self, prompt: str) -> Iterator[str]:
        self.prompts.append(prompt)
        yield from self.pieces


# ---- names -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("theirs", "ours"), sorted(PRAISONAI_NAMES.items()))
def test_praisonai_integrations_names_are_ours(theirs: str, ours: str) -> None:
    import praisonai.integrations
    import praisonai.managed
    from praisonai.integrations import managed_agents, managed_local

    found = getattr(praisonai.integrations, theirs)
    assert found is getattr(praisonai.managed, ours)
    module = managed_local if theirs in managed_local.__all__ else managed_agents
    assert getattr(module, theirs) is found and theirs in praisonai.integrations.__all__


def test_importing_integrations_loads_no_managed_layer_and_no_sdk() -> None:
    code = textwrap.dedent("""
        import sys
        import praisonai.integrations
        heavy = ("praisonai.managed", "praisonai.compute", "e2b", "modal", "docker", "anthropic", "openai")
        assert not [m for m in heavy if m in sys.modules], [m for m in heavy if m in sys.modules]
        from praisonai.integrations import LocalAgent
        assert LocalAgent.__module__ == "praisonai.managed.agent._agent"
        assert not [m for m in ("e2b", "modal", "daytona") if m in sys.modules]
    """)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


# ---- Agent.start(stream=True), flow.run, team.run --------------------------------------------


def test_start_with_stream_echoes_the_backends_text_as_it_comes_and_returns_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from praisonai import Agent

    backend = Backend("Par", "is")
    agent = Agent(name="local-basic", backend=backend)
    assert agent.start("What is the capital of France? One word.", stream=True) == "Paris"
    assert capsys.readouterr().out == "Paris\n"
    assert agent.chat("And of Italy?", stream=True) == "Paris"
    assert capsys.readouterr().out == "Paris\n"
    assert backend.prompts == ["What is the capital of France? One word.", "And of Italy?"]
    assert [m.text for m in agent.history] == [  # type: ignore[union-attr]
        "What is the capital of France? One word.", "Paris", "And of Italy?", "Paris",
    ]  # fmt: skip


def test_start_with_stream_on_a_backend_with_only_execute_prints_its_answer(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """PraisonAI's backend protocol needs only ``execute``: streaming falls back to its answer."""
    from praisonai import Agent

    class ExecuteOnly:
        async def execute(self, prompt: str) -> str:
            return f"answered {prompt}"

    agent = Agent(name="plain", backend=ExecuteOnly())  # type: ignore[arg-type]
    assert agent.start("hi", stream=True) == "answered hi"
    assert capsys.readouterr().out == "answered hi\n" and len(agent.chat_history) == 2


def test_chat_history_is_praisonais_dicts_and_assigning_it_replaces_the_conversation() -> None:
    from praisonai import Agent

    agent = Agent(name="demo", backend=Backend("ready"))
    agent.start("Say hello.")
    said = [{"role": "user", "content": "Say hello."}, {"role": "assistant", "content": "ready"}]
    assert agent.chat_history == said
    agent.chat_history = [{"role": "user", "content": "earlier"}]
    assert agent.chat_history == [{"role": "user", "content": "earlier"}] and len(agent.history) == 1
    agent.chat_history = []
    assert agent.history == []
    with pytest.raises(ValueError, match="'system'"):
        agent.chat_history = [{"role": "system", "content": "x"}]


def test_start_with_stream_without_a_backend_prints_the_answer(capsys: pytest.CaptureFixture[str]) -> None:
    from praisonai import Agent
    from praisonai.llm.testing import ScriptedLLM, reply

    with ScriptedLLM([reply("4"), reply("5")]) as llm:
        agent = Agent(name="maths", **llm.openai_kwargs())
        assert agent.start("2+2?", stream=True) == "4"
        assert agent.start("2+3?", stream=True) == "5"  # a fresh conversation, as start() is
        agent.close()
    assert capsys.readouterr().out == "4\n5\n"
    assert len(agent.history) == 2


def test_flow_and_team_answer_to_praisonais_run() -> None:
    import anyio

    from praisonai import Agent, AgentFlow, AgentTeam

    flow = AgentFlow(steps=[Agent(name="a", backend=Backend("drafted")), lambda text: text.upper()])
    assert flow.run("write").text == "DRAFTED"
    assert anyio.run(flow.arun, "write").text == "DRAFTED"
    writer, reviewer = Backend("draft"), Backend("LGTM")
    team = AgentTeam(agents=[Agent(name="w", backend=writer), Agent(name="r", backend=reviewer)])
    result = team.run("write a haiku")
    assert result.text == "LGTM" and [o.agent for o in result.outputs] == ["w", "r"]
    assert writer.prompts == ["write a haiku"] and "draft" in reviewer.prompts[0]


# ---- configs and records ---------------------------------------------------------------------


def test_packages_config_is_the_packages_dict_and_unknown_managers_are_one_sentence() -> None:
    from praisonai.integrations import LocalAgentConfig, PackagesConfig

    config = LocalAgentConfig(packages=PackagesConfig(pip=["requests"], apt=["git"]))
    assert config.packages == {"pip": ["requests"], "apt": ["git"]}
    with pytest.raises(ConfigError, match="cargo") as refused:
        LocalAgentConfig(packages=PackagesConfig(cargo=["serde"]))
    assert "\n" not in str(refused.value)


def test_a_session_record_reads_as_praisonais_dict(tmp_path: Path) -> None:
    from praisonai.managed.store import SqliteSessionStore

    store = SqliteSessionStore(tmp_path / "store.db")
    try:
        agent = store.upsert_agent("local", "tutor", {"model": "gpt-4o-mini"})
        record, _ = store.create_session(agent, "me", title="maths")
    finally:
        store.close()
    assert (record["id"], record["status"], record["title"]) == (record.id, "idle", "maths")
    assert record["usage"]["input_tokens"] == 0 and "usage" in record and "nope" not in record
    assert record.get("id") == record.id and record.get("nope", "default") == "default"
    assert dict(record)["agent_id"] == agent.id
    with pytest.raises(KeyError):
        record["nope"]


# ---- ManagedAgent's ids, update_agent, compute_provider ---------------------------------------


def test_ids_update_agent_and_compute_provider_before_any_session(tmp_path: Path) -> None:
    from praisonai.integrations import LocalAgent, LocalAgentConfig
    from praisonai.managed.store import SqliteSessionStore

    store = SqliteSessionStore(tmp_path / "store.db")
    config = LocalAgentConfig(name="Tutor", system="Be brief.")
    managed = LocalAgent(compute="local", store=store, config=config)
    try:
        ids = ("agent_id", "agent_version", "environment_id", "session_id")
        assert managed.save_ids() == dict.fromkeys(ids)
        managed.restore_ids(managed.save_ids())  # nothing saved: the next turn starts a new session
        assert managed.session_id is None
        assert managed.compute_provider is not None and managed.compute_provider.provider_name == "local"
        managed.update_agent(name="Senior Tutor", system="Show your work.")
        assert (managed.config.name, managed.config.system) == ("Senior Tutor", "Show your work.")
        with pytest.raises(ConfigError, match="nope"):
            managed.update_agent(nope=1)
        assert managed.config.name == "Senior Tutor"
    finally:
        managed.close()
        store.close()


def test_list_sessions_are_this_agents_as_in_praisonai(tmp_path: Path) -> None:
    from praisonai.integrations import LocalAgent, LocalAgentConfig
    from praisonai.managed.store import SqliteSessionStore

    store = SqliteSessionStore(tmp_path / "store.db")
    managed = LocalAgent(compute="local", store=store, config=LocalAgentConfig(name="Tutor"))
    try:
        assert managed.list_sessions() == []
        mine = [store.upsert_agent("local", "Tutor", {"v": v}) for v in (1, 2)]  # two versions of it
        other = store.upsert_agent("local", "Other", {})
        made = [store.create_session(agent, "me")[0].id for agent in (mine[0], other, mine[1])]
        assert [s["id"] for s in managed.list_sessions()] == [made[2], made[0]]
        assert [s["id"] for s in managed.list_sessions(limit=1)] == [made[2]]
    finally:
        managed.close()
        store.close()


def test_update_agent_on_the_hosted_loop_is_one_sentence(tmp_path: Path) -> None:
    from praisonai.integrations import HostedAgent, HostedAgentConfig
    from praisonai.managed.store import SqliteSessionStore

    store = SqliteSessionStore(tmp_path / "store.db")
    managed = HostedAgent(config=HostedAgentConfig(name="hosted"), store=store, api_key="sk-unused")
    try:
        assert managed.provider == "anthropic" and managed.agent_id is None
        with pytest.raises(UnsupportedFeatureError, match="new ManagedAgent") as refused:
            managed.update_agent(system="x")
        assert "\n" not in str(refused.value)
    finally:
        managed.close()
        store.close()
