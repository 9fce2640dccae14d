"""What AgentTeam and AgentFlow share: their result type and running inside a SharedCompute."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from praisonai import _portal
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


def run_sync(compute: Any, agents: Sequence[Any], arun: Callable[[], Awaitable[T]]) -> T:
    """Run ``arun`` on the portal loop; inside ``SharedCompute(compute)`` when compute is not None."""
    if compute is None:
        return _portal.call(arun)
    with SharedCompute(compute) as shared:
        shared.attach(agents)
        return _portal.call(arun)


async def run_async(compute: Any, agents: Sequence[Any], arun: Callable[[], Awaitable[T]]) -> T:
    """Await ``arun``; inside ``SharedCompute(compute)`` when compute is not None."""
    if compute is None:
        return await arun()
    async with SharedCompute(compute) as shared:
        shared.attach(agents)
        return await arun()
