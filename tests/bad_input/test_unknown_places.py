"""A place no provider answers to, given to any entry point that takes one: refused when the object is
made, in the one sentence ``SharedCompute`` says, before any model request, leaving nothing behind.

Each row is an entry point (how a user names the place there) and the place; the expected
sentence is SharedCompute's own for that place, so every entry point must say exactly it.
"""

from __future__ import annotations

import importlib.util
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kit import left_behind

from praisonai import Agent, AgentFlow, AgentTeam, LocalAgent, ManagedAgent, SharedCompute
from praisonai._errors import ConfigError, MissingDependencyError, PraisonAIError, UnknownProviderError
from praisonai.llm.testing import API_KEY, ScriptedLLM

Build = Callable[[object, dict[str, Any]], object]
#: (entry point, how it is built from the place and the model's endpoint keywords)
ENTRY_POINTS: list[tuple[str, Build]] = [
    ("Agent(tools_run_on=)", lambda p, llm: Agent("a", tools_run_on=p, **llm)),
    ("AgentTeam(compute=)", lambda p, llm: AgentTeam([Agent("a", **llm)], compute=p)),
    ("AgentTeam(tools_run_on=)", lambda p, llm: AgentTeam([Agent("a", **llm)], tools_run_on=p)),
    ("AgentFlow(compute=)", lambda p, llm: AgentFlow([Agent("a", **llm)], compute=p)),
    ("AgentFlow(tools_run_on=)", lambda p, llm: AgentFlow(steps=[Agent("a", **llm)], tools_run_on=p)),
    ("ManagedAgent(compute=)", lambda p, llm: ManagedAgent(compute=p, **llm)),
    ("LocalAgent(tools_run_on=)", lambda p, llm: LocalAgent(tools_run_on=p, **llm)),
    ("hosted ManagedAgent(compute=)", lambda p, llm: ManagedAgent(provider="anthropic", compute=p, **llm)),
    ("SharedCompute()", lambda p, llm: SharedCompute(p)),
]
#: (place, the error, a fragment of its sentence: what was wrong and what to do)
PLACES: list[tuple[str, type[PraisonAIError], str]] = [
    ("dokcer", UnknownProviderError, "unknown compute provider 'dokcer'; available: "),
    ("ssh", MissingDependencyError, "pip install 'praisonai[ssh]'"),  # paramiko hidden below
]


@pytest.fixture
def llm(home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """A scripted model every entry point is pointed at, which must never be asked anything; and
    paramiko hidden, as on a machine without the ssh extra."""
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "paramiko" else real(name, *a)
    )
    with ScriptedLLM() as server:
        yield {"api_key": API_KEY, "base_url": f"{server.url}/v1"}
        assert server.requests == [], "a model request was made for a refused place"


def _sentence(place: str) -> str:
    with pytest.raises(PraisonAIError) as caught:
        SharedCompute(place)
    return str(caught.value)


@pytest.mark.parametrize(("place", "error", "fragment"), PLACES, ids=[p[0] for p in PLACES])
@pytest.mark.parametrize("build", [e[1] for e in ENTRY_POINTS], ids=[e[0] for e in ENTRY_POINTS])
def test_every_entry_point_refuses_an_unusable_place_when_made_in_one_sentence(
    home: Path, llm: dict[str, Any], build: Build, place: str, error: type[PraisonAIError], fragment: str
) -> None:
    with pytest.raises(error) as caught:
        build(place, llm)
    said = str(caught.value)
    assert said == _sentence(place), "another sentence than SharedCompute's for the same place"
    assert fragment in said and "\n" not in said
    assert left_behind(home) == []


def test_the_legacy_sandbox_provider_is_checked_the_same_way(
    home: Path, llm: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ManagedAgent(provider="modal")`` (PraisonAI's older spelling) with modal's SDK missing."""
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "modal" else real(name, *a)
    )
    with warnings.catch_warnings(), pytest.raises(MissingDependencyError) as caught:
        warnings.simplefilter("ignore", DeprecationWarning)  # the warning is tests/compat's subject
        ManagedAgent(provider="modal", **llm)
    assert str(caught.value) == _sentence("modal")
    assert "pip install 'praisonai[modal]'" in str(caught.value)
    assert left_behind(home) == []


#: (entry point, its two spellings naming different places, the fragment naming both)
TWO_PLACES: list[tuple[str, Callable[[dict[str, Any]], object], str]] = [
    (
        "AgentTeam",
        lambda llm: AgentTeam([Agent("a", **llm)], compute="docker", tools_run_on="local"),
        "AgentTeam was given compute='docker' and tools_run_on='local'",
    ),
    (
        "AgentFlow",
        lambda llm: AgentFlow([Agent("a", **llm)], compute="local", tools_run_on="docker"),
        "AgentFlow was given compute='local' and tools_run_on='docker'",
    ),
    (
        "ManagedAgent",
        lambda llm: ManagedAgent(compute="docker", tools_run_on="local", **llm),
        "ManagedAgent was given compute='docker' and tools_run_on='local'",
    ),
]


@pytest.mark.parametrize(("build", "fragment"), [t[1:] for t in TWO_PLACES], ids=[t[0] for t in TWO_PLACES])
def test_two_spellings_naming_different_places_are_refused(
    home: Path, llm: dict[str, Any], build: Callable[[dict[str, Any]], object], fragment: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        build(llm)
    said = str(caught.value)
    assert fragment in said and "give only compute=" in said and "\n" not in said
    assert left_behind(home) == []
