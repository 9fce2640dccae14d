"""What AgentTeam and AgentFlow share: their result type and running inside a SharedCompute."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import anyio.to_thread

from praisonai import _portal
from praisonai._errors import ConfigError, ExecError
from praisonai.compute.workspace import from_keywords
from praisonai.managed import SharedCompute


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
    #: With a ``workspace`` or ``repo``: the working dir's changes as a ``git diff`` patch, taken
    #: before the instance is removed (``None`` without one, or when git could not make it).
    diff: str | None = None

    def __str__(self) -> str:
        return self.text


def workspace_keywords(owner: str, compute: Any, **given: Any) -> dict[str, Any]:
    """``workspace``/``repo``/``repo_token_env`` for the run's SharedCompute, checked now (a bad
    path or URL is said before any model is asked anything)."""
    given = {name: value for name, value in given.items() if value is not None}
    if given and compute is None:
        raise ConfigError(
            f"{owner}'s {' and '.join(given)} {'need' if len(given) > 1 else 'needs'} compute= (the instance "
            "to put it in)",
            op="workspace",
        )
    from_keywords(given.get("workspace"), given.get("repo"), given.get("repo_token_env"))
    return given


def run_sync(
    compute: Any, agents: Sequence[Any], workspace: dict[str, Any], arun: Callable[[], Awaitable[RunResult]]
) -> RunResult:
    """Run ``arun`` on the portal loop; inside ``SharedCompute(compute, **workspace)`` when
    compute is not None."""
    if compute is None:
        return _portal.call(arun)
    with SharedCompute(compute, **workspace) as shared:
        shared.attach(agents, loop_tools=True)
        if shared.resources:  # the upload or clone first: a bad ref is said before a model is asked
            shared.ensure()
        return _with_diff(_portal.call(arun), shared)


async def run_async(
    compute: Any, agents: Sequence[Any], workspace: dict[str, Any], arun: Callable[[], Awaitable[RunResult]]
) -> RunResult:
    """Await ``arun``; inside ``SharedCompute(compute, **workspace)`` when compute is not None."""
    if compute is None:
        return await arun()
    async with SharedCompute(compute, **workspace) as shared:
        shared.attach(agents, loop_tools=True)
        if shared.resources:
            await shared.aensure()
        result = await arun()
        return await anyio.to_thread.run_sync(_with_diff, result, shared)


def _with_diff(result: RunResult, shared: SharedCompute) -> RunResult:
    if not shared.resources or shared.instance_id is None:
        return result
    try:
        return dataclasses.replace(result, diff=shared.diff())
    except ExecError:  # no git in the instance: the run's answer stands without it
        return result
