"""The managed CLI lines of PraisonAI's README, as its users type them:
``praisonai managed sessions list <agent-id>`` (the agent as an argument, as well as ``--agent``)
and ``praisonai managed sessions resume <session-id> "<prompt>"``. In-process (typer's runner), on
the local provider, the model the scripted server driven by the real openai SDK."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from praisonai._errors import ConfigError
from praisonai._ledger import Ledger
from praisonai.cli._app import build
from praisonai.llm.testing import API_KEY, ScriptedLLM, reply


@pytest.fixture
def managed(home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[CliRunner, ScriptedLLM]]:
    """``praisonai managed …`` in this process with this test's home and the scripted model; every
    instance its sessions made is stopped afterwards, by id."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("CLAUDE_API_KEY", raising=False)
    with ScriptedLLM() as llm:
        monkeypatch.setenv("OPENAI_BASE_URL", f"{llm.url}/v1")
        monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
        yield CliRunner(), llm
    made = [e.instance_id for e in Ledger.default().entries()]
    if made:
        stopped = CliRunner().invoke(build(["compute"]), ["compute", "stop", *made])
        assert stopped.exit_code == 0, stopped.output
    assert not list(Ledger.default().entries()), "an instance of the test outlived it"


def praisonai(runner: CliRunner, line: str, *args: str) -> Result:
    """``praisonai managed`` + the words of ``line`` + ``args`` (the prompt, kept whole)."""
    words = [*line.split(), *args]
    assert words[0] == "managed"
    return runner.invoke(build(["managed"]), words)


def a_session(runner: CliRunner, llm: ScriptedLLM, agent: str) -> str:
    llm.set_script([reply(f"hello from {agent}")])
    r = praisonai(runner, f"managed run --compute local --model gpt-4o-mini --name {agent}", "hi")
    assert r.exit_code == 0, r.output
    sid = r.stderr.splitlines()[0].removeprefix("session: ")
    assert sid.startswith("msess_"), r.stderr
    return sid


def listed(runner: CliRunner, line: str) -> list[str]:
    r = praisonai(runner, f"{line} --json")
    assert r.exit_code == 0, r.output
    return [row["id"] for row in json.loads(r.stdout)]


def test_sessions_list_takes_the_agent_as_an_argument_or_as_agent(
    managed: tuple[CliRunner, ScriptedLLM],
) -> None:
    runner, llm = managed
    alpha, beta = a_session(runner, llm, "alpha"), a_session(runner, llm, "beta")
    rows = json.loads(praisonai(runner, "managed sessions list --json").stdout)
    [agent_id] = [row["agent_id"] for row in rows if row["id"] == alpha]

    assert set(listed(runner, "managed sessions list")) == {alpha, beta}
    assert listed(runner, f"managed sessions list {agent_id}") == [alpha]  # PraisonAI's README line
    assert listed(runner, "managed sessions list beta") == [beta]  # by name, as --agent takes it
    assert listed(runner, f"managed sessions list --agent {agent_id}") == [alpha]
    assert listed(runner, "managed sessions list beta --agent beta") == [beta]  # both, agreeing


def test_an_agent_given_twice_and_differently_is_one_sentence(
    managed: tuple[CliRunner, ScriptedLLM],
) -> None:
    runner, _llm = managed
    r = praisonai(runner, "managed sessions list alpha --agent beta")
    assert isinstance(r.exception, ConfigError)  # `praisonai` prints it as one line, exit 2
    assert str(r.exception) == (
        "sessions list got 'alpha' as its argument and --agent 'beta'; give one of them"
    )


def test_sessions_resume_sends_the_prompt_given_after_the_id(
    managed: tuple[CliRunner, ScriptedLLM],
) -> None:
    runner, llm = managed
    sid = a_session(runner, llm, "alpha")
    llm.set_script([reply("we said hello")])
    r = praisonai(runner, f"managed sessions resume {sid}", "What did we do?")  # PraisonAI's README line
    assert r.exit_code == 0, r.output
    assert r.stdout.endswith("we said hello\n")
    sent = [m for m in llm.requests[-1]["messages"] if m["role"] == "user"]
    assert [m["content"] for m in sent][-2:] == ["hi", "What did we do?"]
    assert listed(runner, "managed sessions list alpha") == [sid]
