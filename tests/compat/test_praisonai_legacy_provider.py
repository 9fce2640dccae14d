"""PraisonAI's older ``ManagedAgent(provider=...)``, where ``provider`` named the sandbox (or the model
API), as its users wrote it: the loop runs here, on the scripted model, with its tools on that
sandbox (docker for real, e2b on its wire fake), and a DeprecationWarning names today's spelling.
The model is reached through the SDK's own variables, as a PraisonAI user's code leaves it."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator

import pytest

from praisonai import LocalManagedConfig, ManagedAgent, _portal
from praisonai._errors import ConfigError
from praisonai.compute.base import ComputeProvider
from praisonai.llm.testing import API_KEY, ScriptedLLM, reply, tool
from praisonai.managed.sessions import delete_session

pytestmark = pytest.mark.usefixtures("home")


@pytest.fixture
def llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedLLM]:
    """The scripted model behind OPENAI_BASE_URL; a hosted key set too, to show that a sandbox
    provider still runs the loop here (PraisonAI's rule)."""
    with ScriptedLLM() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
        monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "not-used")
        yield server


def _legacy(provider: str) -> ManagedAgent:
    """``ManagedAgent(provider=<sandbox>)`` as PraisonAI wrote it, its warning checked."""
    config = LocalManagedConfig(model="gpt-4o-mini", system="You are a coder.", environment=False)
    with pytest.warns(DeprecationWarning) as caught:
        managed = ManagedAgent(provider=provider, config=config)
    [warning] = caught.list
    assert f"write ManagedAgent(compute={provider!r})" in str(warning.message)
    assert warning.filename == __file__, "the warning points inside praisonai, not at the user's line"
    return managed


def _turn_on_its_sandbox(managed: ManagedAgent, llm: ScriptedLLM, provider: ComputeProvider) -> None:
    """One turn that writes a file with the tools and runs it; then the file is read back through
    the provider itself, from the instance the session made, which must be the provider's."""
    llm.set_script([
        reply(tool("write_file", path="made_here.txt", content="by the local loop\n")),
        reply(tool("execute_command", command="cat made_here.txt")),
        reply("done"),
    ])  # fmt: skip
    try:
        assert managed.start("write made_here.txt and show it") == "done"
        assert managed.provider == "local" and len(llm.requests) == 3, "the loop did not run here"
        assert "by the local loop" in json.dumps(llm.requests[2]["messages"][-1])
        assert managed.session_id is not None
        [made] = [
            s.event for s in managed.store.events(managed.session_id) if s.event.type == "sandbox.provisioned"
        ]
        assert made.data["provider"] == provider.provider_name
        data = _portal.call(provider.read_file, made.data["instance_id"], "made_here.txt")
        assert data == b"by the local loop\n"
    finally:
        managed.close()
        if managed.session_id is not None:
            delete_session(managed.session_id)
    assert made.data["instance_id"] not in [i.instance_id for i in _portal.call(provider.list_instances)]


@pytest.mark.usefixtures("docker_ok")
def test_provider_docker_runs_the_local_loop_with_its_tools_in_docker(llm: ScriptedLLM) -> None:
    from praisonai.compute.providers.docker import DockerCompute

    _turn_on_its_sandbox(_legacy("docker"), llm, DockerCompute())


@pytest.mark.usefixtures("docker_ok", "collect_sdk_garbage")
def test_provider_e2b_runs_the_local_loop_with_its_tools_on_e2b(
    llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("e2b")
    from fakes.e2b import E2BFake

    from praisonai.compute.providers.e2b import E2BCompute

    with E2BFake() as fake:
        for key, value in fake.env().items():
            monkeypatch.setenv(key, value)
        _turn_on_its_sandbox(_legacy("e2b"), llm, E2BCompute())


@pytest.mark.parametrize("provider", ["e2b", "modal", "flyio", "daytona", "docker", "tenki"])
def test_every_legacy_sandbox_name_warns_and_places_the_tools_there(llm: ScriptedLLM, provider: str) -> None:
    managed = _legacy(provider)
    with contextlib.closing(managed):
        assert (managed.provider, managed.compute) == ("local", provider)
    assert llm.requests == []


def test_the_legacy_provider_and_a_different_compute_are_refused(llm: ScriptedLLM) -> None:
    with pytest.warns(DeprecationWarning), pytest.raises(ConfigError) as caught:
        ManagedAgent(provider="e2b", compute="docker")
    assert "ManagedAgent was given compute='docker' and provider='e2b'" in str(caught.value)
    with pytest.warns(DeprecationWarning):
        same = ManagedAgent(provider="docker", compute="docker")
    assert same.compute == "docker"
    same.close()


def test_model_api_providers_warn_and_route_the_model_as_praisonai_does(
    llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``provider="ollama"`` with a bare model name talks to Ollama (here: the scripted server at
    OLLAMA_BASE_URL; with no OpenAI key, the OpenAI route would be refused)."""
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("OPENAI_BASE_URL")
    monkeypatch.setenv("OLLAMA_BASE_URL", f"{llm.url}/v1")
    llm.set_script([reply("hi from llama")])
    config = LocalManagedConfig(model="llama3.1", environment=False)
    with pytest.warns(DeprecationWarning, match=r"model='ollama/<name>'"):
        managed = ManagedAgent(provider="ollama", compute="local", config=config)
    try:
        assert managed.start("hello") == "hi from llama"
        assert llm.requests[0]["model"] == "llama3.1"
    finally:
        managed.close()
        if managed.session_id is not None:
            delete_session(managed.session_id)
    with pytest.warns(DeprecationWarning, match=r"provider='openai'\) is PraisonAI's older spelling"):
        ManagedAgent(provider="openai", compute="local").close()


def test_the_current_spellings_do_not_warn(llm: ScriptedLLM) -> None:
    """``"local"``, ``"anthropic"`` and no provider are today's spellings (warnings are errors here)."""
    for managed in (
        ManagedAgent(provider="local", compute="local"),
        ManagedAgent(provider="anthropic"),
        ManagedAgent(compute="docker"),
    ):
        managed.close()
