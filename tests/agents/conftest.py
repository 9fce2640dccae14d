"""The scripted LLM server (praisonai.agents.testing) as a fixture: a fresh script per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from praisonai.agents.testing import ScriptedLLM


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    """A scripted OpenAI + Anthropic API on 127.0.0.1; set its replies with ``llm.set_script``."""
    with ScriptedLLM() as server:
        yield server
