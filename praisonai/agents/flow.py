"""AgentFlow: a pipeline of steps, each turning the previous step's text into new text.

A step is an :class:`Agent` (``await agent.astart(text)``), a Python function of the text (sync
functions run in a worker thread; the result is ``str()``-ed), a list of steps (run in order), or
one of the patterns below::

    flow = AgentFlow([
        classifier,
        route({"bug": [triager, fixer], "feature": planner}, default=responder),
        parallel([reviewer_a, reviewer_b]),              # same input; outputs joined
        repeat(editor, until=lambda t: "LGTM" in t, max_iterations=3),
        loop(summariser),                                # once per non-empty line of the input
        when(lambda t: "deploy" in t, then=deployer, else_=None),
    ])
    result = flow.start("…")                             # a RunResult
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Union

import anyio
import anyio.to_thread

from praisonai._errors import ConfigError
from praisonai.agents._run import AgentOutput, RunResult, place, run_async, run_sync
from praisonai.agents.agent import Agent

Step = Union[Agent, "Route", "Parallel", "Repeat", "Loop", "When", Sequence["Step"], Callable[[str], Any]]
Condition = Callable[[str], bool]


@dataclass(frozen=True)
class Route:
    """Pick one branch by the input: ``key(input)`` if given, else the first route name the input
    contains (case-insensitive); ``default`` when none matches (the input passes through if None)."""

    routes: Mapping[str, Step]
    default: Step | None = None
    key: Callable[[str], str] | None = None


@dataclass(frozen=True)
class Parallel:
    """Run every step concurrently on the same input; the output joins theirs, in step order."""

    steps: tuple[Step, ...]


@dataclass(frozen=True)
class Repeat:
    """Run ``step`` on its own output until ``until(output)`` or ``max_iterations`` runs."""

    step: Step
    until: Condition
    max_iterations: int


@dataclass(frozen=True)
class Loop:
    """Run ``step`` once per item (``items``, else the input's non-empty lines); outputs joined."""

    step: Step
    items: tuple[str, ...] | None
    parallel: bool


@dataclass(frozen=True)
class When:
    """``then`` when ``condition(input)`` (a string: the input contains it), else ``else_``
    (the input passes through if None)."""

    condition: Condition | str
    then: Step
    else_: Step | None


def route(
    routes: Mapping[str, Step], default: Step | None = None, key: Callable[[str], str] | None = None
) -> Route:
    """See :class:`Route`."""
    return Route(dict(routes), default, key)


def parallel(steps: Sequence[Step]) -> Parallel:
    """See :class:`Parallel`."""
    return Parallel(tuple(steps))


def repeat(step: Step, until: Condition, max_iterations: int = 5) -> Repeat:
    """See :class:`Repeat`."""
    if max_iterations < 1:
        raise ConfigError(f"max_iterations must be at least 1, got {max_iterations}", op="flow")
    return Repeat(step, until, max_iterations)


def loop(step: Step, items: Sequence[str] | None = None, parallel: bool = False) -> Loop:
    """See :class:`Loop`; ``parallel=True`` runs the items concurrently."""
    return Loop(step, tuple(items) if items is not None else None, parallel)


def when(condition: Condition | str, then: Step, else_: Step | None = None) -> When:
    """See :class:`When`."""
    return When(condition, then, else_)


class AgentFlow:
    """A pipeline of steps (see the module docstring), optionally sharing one remote instance.

    ``compute``: None, or a provider name or instance: the run happens inside
    ``praisonai.managed.SharedCompute(compute)`` with :attr:`agents` attached (an agent with its
    own ``tools_run_on`` or ``backend`` keeps it). ``tools_run_on``: PraisonAI's name for
    ``compute``; give one of the two.
    """

    def __init__(self, steps: Sequence[Step], compute: Any = None, tools_run_on: Any = None) -> None:
        self.steps = list(steps)
        self.compute = place(compute, tools_run_on, "flow")

    @property
    def agents(self) -> list[Agent]:
        """Every agent in the (nested) steps, each once, in first-seen order."""
        seen: dict[int, Agent] = {}
        for agent in _agents(self.steps):
            seen.setdefault(id(agent), agent)
        return list(seen.values())

    def start(self, input: str = "") -> RunResult:
        """Run the flow on ``input`` (blocking); the result's text is the last step's output."""
        return run_sync(self.compute, self.agents, lambda: self._run(input))

    async def astart(self, input: str = "") -> RunResult:
        """Async :meth:`start`."""
        return await run_async(self.compute, self.agents, lambda: self._run(input))

    async def _run(self, text: str) -> RunResult:
        outputs: list[AgentOutput] = []
        final = await _run_step(self.steps, text, outputs)
        return RunResult(final, tuple(outputs))


def _agents(step: Step | None) -> Iterator[Agent]:
    if isinstance(step, Agent):
        yield step
    elif isinstance(step, Route):
        for branch in (*step.routes.values(), step.default):
            yield from _agents(branch)
    elif isinstance(step, Parallel):
        for branch in step.steps:
            yield from _agents(branch)
    elif isinstance(step, Repeat | Loop):
        yield from _agents(step.step)
    elif isinstance(step, When):
        yield from _agents(step.then)
        yield from _agents(step.else_)
    elif isinstance(step, Sequence) and not isinstance(step, str):
        for inner in step:
            yield from _agents(inner)


async def _run_step(step: Step | None, text: str, outputs: list[AgentOutput]) -> str:
    """Run one step on ``text`` and return its output; agent answers are appended to ``outputs``."""
    if step is None:
        return text
    if isinstance(step, Agent):
        answer = await step.astart(text)
        outputs.append(AgentOutput(step.name, answer))
        return answer
    if isinstance(step, Route):
        return await _run_step(_branch(step, text), text, outputs)
    if isinstance(step, Parallel):
        return "\n\n".join(await _gather([(s, text) for s in step.steps], outputs))
    if isinstance(step, Repeat):
        return await _repeat(step, text, outputs)
    if isinstance(step, Loop):
        return await _loop(step, text, outputs)
    if isinstance(step, When):
        chosen = step.condition in text if isinstance(step.condition, str) else step.condition(text)
        return await _run_step(step.then if chosen else step.else_, text, outputs)
    if isinstance(step, Sequence) and not isinstance(step, str):
        for inner in step:
            text = await _run_step(inner, text, outputs)
        return text
    if callable(step):
        return await _call(step, text)
    raise ConfigError(f"not a flow step: {step!r}", op="flow")


def _branch(step: Route, text: str) -> Step | None:
    if step.key is not None:
        return step.routes.get(step.key(text), step.default)
    lowered = text.lower()
    for name, branch in step.routes.items():
        if name.lower() in lowered:
            return branch
    return step.default


async def _repeat(step: Repeat, text: str, outputs: list[AgentOutput]) -> str:
    for _ in range(step.max_iterations):
        text = await _run_step(step.step, text, outputs)
        if step.until(text):
            break
    return text


async def _loop(step: Loop, text: str, outputs: list[AgentOutput]) -> str:
    items = step.items if step.items is not None else tuple(x for x in text.splitlines() if x.strip())
    if step.parallel:
        return "\n".join(await _gather([(step.step, item) for item in items], outputs))
    return "\n".join([await _run_step(step.step, item, outputs) for item in items])


async def _gather(runs: Sequence[tuple[Step, str]], outputs: list[AgentOutput]) -> list[str]:
    """Run each (step, input) concurrently; results in the order given."""
    results = [""] * len(runs)

    async def one(i: int) -> None:
        results[i] = await _run_step(runs[i][0], runs[i][1], outputs)

    async with anyio.create_task_group() as group:
        for i in range(len(runs)):
            group.start_soon(one, i)
    return results


async def _call(fn: Callable[[str], Any], text: str) -> str:
    if inspect.iscoroutinefunction(fn):
        result = await fn(text)
    else:
        result = await anyio.to_thread.run_sync(fn, text)
        if inspect.isawaitable(result):
            result = await result
    return result if isinstance(result, str) else str(result)
