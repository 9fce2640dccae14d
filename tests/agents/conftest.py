"""The scripted LLM server (praisonai.llm.testing) as a fixture: a fresh script per test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from praisonai.agents import Agent
from praisonai.llm.testing import ScriptedLLM


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    """A scripted OpenAI + Anthropic API on 127.0.0.1; set its replies with ``llm.set_script``."""
    with ScriptedLLM() as server:
        yield server


@pytest.fixture
def make_agent(llm: ScriptedLLM) -> Iterator[Callable[..., Agent]]:
    """``make_agent(name, instructions=None, **kwargs)``: an Agent talking to ``llm`` (an
    ``anthropic/…`` model gets the Anthropic endpoint), closed after the test."""
    made: list[Agent] = []

    def make(name: str, instructions: str | None = None, **kwargs: Any) -> Agent:
        anthropic = str(kwargs.get("model", "")).startswith("anthropic/")
        endpoint = llm.anthropic_kwargs() if anthropic else llm.openai_kwargs()
        agent = Agent(name, instructions, **{**endpoint, **kwargs})
        made.append(agent)
        return agent

    yield make
    for agent in made:
        agent.close()
