"""What AgentTeam and AgentFlow share: their result type and running inside a SharedCompute."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from praisonai import _portal
from praisonai._errors import ConfigError
from praisonai.agents.agent import Agent
from praisonai.managed import SharedCompute

T = TypeVar("T")


@dataclass(frozen=True)
class AgentOutput:
    """What one agent answered during a run."""

    agent: str
    text: str


@dataclass(frozen=True)
class RunResult:
    """A team's or a flow's result: the final text, and every agent answer
    (in completion order; a parallel team's in agent order)."""

    text: str
    outputs: tuple[AgentOutput, ...]

    def __str__(self) -> str:
        return self.text


def place(compute: Any, tools_run_on: Any, op: str) -> Any:
    """The run's place from ``compute`` or its PraisonAI spelling ``tools_run_on`` (one of them)."""
    if compute is not None and tools_run_on is not None:
        raise ConfigError(
            f"give the {op} compute= or tools_run_on= (PraisonAI's name for it), not both", op=op
        )
    return compute if compute is not None else tools_run_on


def run_sync(compute: Any, agents: Sequence[Agent], arun: Callable[[], Awaitable[T]]) -> T:
    """Run ``arun`` on the portal loop; inside ``SharedCompute(compute)`` when compute is not None."""
    if compute is None:
        return _portal.call(arun)
    with SharedCompute(compute) as shared:
        shared.attach(agents)
        return _portal.call(arun)


async def run_async(compute: Any, agents: Sequence[Agent], arun: Callable[[], Awaitable[T]]) -> T:
    """Await ``arun``; inside ``SharedCompute(compute)`` when compute is not None."""
    if compute is None:
        return await arun()
    async with SharedCompute(compute) as shared:
        shared.attach(agents)
        return await arun()
