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
        when("{{score}} > 80", [approver], [rejecter]),  # PraisonAI's condition template
    ])
    result = flow.start("…")                             # a RunResult

A step is an agent when it is an :class:`Agent` or looks like one, as PraisonAI's agents do (it
has ``chat`` and ``instructions`` or ``role``): such an agent answers through ``chat(text)``, run
in a worker thread.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

import anyio
import anyio.to_thread

from praisonai._errors import ConfigError
from praisonai.agents import _conditions
from praisonai.agents._run import AgentOutput, RunResult, run_async, run_sync, workspace_keywords
from praisonai.agents.agent import Agent
from praisonai.managed.tools_place import one_place

Step = Union[Agent, "Route", "Parallel", "Repeat", "Loop", "When", Sequence["Step"], Callable[[str], Any]]
Condition = Callable[[str], bool]


@dataclass(frozen=True)
class Route:
    """Pick one branch by the input: ``key(input)`` if given, else the first route name the input
    contains (case-insensitive); ``default`` when none matches (the input passes through if None).
    A route named ``"default"`` is the default when none is given (PraisonAI's spelling)."""

    routes: Mapping[str, Step]
    default: Step | None = None
    key: Callable[[str], str] | None = None


@dataclass(frozen=True)
class Parallel:
    """Run every step concurrently on the same input; the output joins theirs, in step order."""

    steps: tuple[Step, ...]


@dataclass(frozen=True)
class Repeat:
    """Run ``step`` on its own output until ``until(output)`` or ``max_iterations`` runs
    (all of them when ``until`` is None)."""

    step: Step
    until: Condition | None
    max_iterations: int


@dataclass(frozen=True)
class Loop:
    """Run ``step`` once per item (``items``, else the input's non-empty lines); outputs joined."""

    step: Step
    items: tuple[str, ...] | None
    parallel: bool


@dataclass(frozen=True)
class When:
    """``then`` when the condition holds, else ``else_`` (the input passes through if None).

    The condition is a function of the input; or a PraisonAI template with ``{{name}}``
    placeholders (``"{{score}} > 80"``, see :mod:`praisonai.agents._conditions`), whose names are
    the flow's ``variables``, ``input`` (the flow's input), ``previous_output`` (this step's
    input) and ``<agent name>_output`` (that agent's latest answer); or any other string: the
    input contains it."""

    condition: Condition | str
    then: Step
    else_: Step | None


def route(
    routes: Mapping[str, Step], default: Step | None = None, key: Callable[[str], str] | None = None
) -> Route:
    """See :class:`Route`."""
    routes = dict(routes)
    if default is None and "default" in routes:
        default = routes.pop("default")
    return Route(routes, default, key)


def parallel(steps: Sequence[Step]) -> Parallel:
    """See :class:`Parallel`."""
    return Parallel(tuple(steps))


def repeat(step: Step, until: Condition | None = None, max_iterations: int = 5) -> Repeat:
    """See :class:`Repeat`."""
    if max_iterations < 1:
        raise ConfigError(f"max_iterations must be at least 1, got {max_iterations}", op="flow")
    return Repeat(step, until, max_iterations)


def loop(step: Step, items: Sequence[str] | None = None, parallel: bool = False) -> Loop:
    """See :class:`Loop`; ``parallel=True`` runs the items concurrently."""
    return Loop(step, tuple(items) if items is not None else None, parallel)


def when(
    condition: Condition | str,
    then: Step | None = None,
    else_: Step | None = None,
    *,
    then_steps: Step | None = None,
    else_steps: Step | None = None,
) -> When:
    """See :class:`When`. ``then_steps``/``else_steps`` are PraisonAI's names for ``then``/``else_``."""
    if (then is not None and then_steps is not None) or (else_ is not None and else_steps is not None):
        raise ConfigError("give when() then= or then_steps= (and else_= or else_steps=), not both", op="flow")
    chosen = then if then is not None else then_steps
    if chosen is None:
        raise ConfigError("when() needs the steps to run when the condition holds: then=", op="flow")
    return When(condition, chosen, else_ if else_ is not None else else_steps)


class AgentFlow:
    """A pipeline of steps (see the module docstring), optionally sharing one remote instance.

    ``compute``: None, or a provider name or instance: the run happens inside
    ``praisonai.managed.SharedCompute(compute)`` with :attr:`agents` attached (an agent with its
    own ``tools_run_on`` or ``backend`` keeps it). ``tools_run_on``: PraisonAI's name for
    ``compute`` (both may be given when they name the same place). An unknown name, or a
    provider whose SDK is missing, is refused here. ``variables``: names a ``when`` template
    may read (PraisonAI's ``AgentFlow(variables=...)``). ``workspace``, ``repo``,
    ``repo_token_env``: as :class:`AgentTeam`'s.
    """

    def __init__(
        self,
        steps: Sequence[Step],
        compute: Any = None,
        tools_run_on: Any = None,
        *,
        variables: Mapping[str, Any] | None = None,
        workspace: str | os.PathLike[str] | None = None,
        repo: str | None = None,
        repo_token_env: str | None = None,
    ) -> None:
        self.steps = list(steps)
        self.compute = one_place("AgentFlow", compute=compute, tools_run_on=tools_run_on)
        self.workspace = workspace_keywords(
            "AgentFlow", self.compute, workspace=workspace, repo=repo, repo_token_env=repo_token_env
        )
        self.variables = dict(variables or {})

    @property
    def tools_run_on(self) -> Any:
        """PraisonAI's name for :attr:`compute`."""
        return self.compute

    @property
    def agents(self) -> list[Any]:
        """Every agent in the (nested) steps, each once, in first-seen order; plain functions
        and other steps are not agents."""
        seen: dict[int, Any] = {}
        for agent in _agents(self.steps):
            seen.setdefault(id(agent), agent)
        return list(seen.values())

    def _collect_agents(self) -> list[Any]:
        """PraisonAI's name for :attr:`agents`."""
        return self.agents

    def start(self, input: str = "") -> RunResult:
        """Run the flow on ``input`` (blocking); the result's text is the last step's output."""
        return run_sync(self.compute, self.agents, self.workspace, lambda: self._run(input))

    async def astart(self, input: str = "") -> RunResult:
        """Async :meth:`start`."""
        return await run_async(self.compute, self.agents, self.workspace, lambda: self._run(input))

    #: PraisonAI's names (its ``Workflow.run``/``arun``) for :meth:`start` and :meth:`astart`.
    run, arun = start, astart

    async def _run(self, text: str) -> RunResult:
        run = _Run({**self.variables, "input": text})
        final = await _run_step(self.steps, text, run)
        return RunResult(final, tuple(run.outputs))


@dataclass
class _Run:
    """One run's state: the agent answers so far, and the names a ``when`` template reads."""

    variables: dict[str, Any]
    outputs: list[AgentOutput] = field(default_factory=list)

    def answered(self, agent: str, text: str) -> None:
        self.outputs.append(AgentOutput(agent, text))
        self.variables[f"{agent}_output"] = text


def _is_agent(step: object) -> bool:
    """An :class:`Agent`, or an object that looks like one (PraisonAI's duck test)."""
    return isinstance(step, Agent) or (
        hasattr(step, "chat") and (hasattr(step, "instructions") or hasattr(step, "role"))
    )


def _agents(step: Step | None) -> Iterator[Any]:
    if _is_agent(step):
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


async def _run_step(step: Step | None, text: str, run: _Run) -> str:
    """Run one step on ``text`` and return its output; agent answers are recorded in ``run``."""
    if step is None:
        return text
    if _is_agent(step):
        return await _ask(step, text, run)
    if isinstance(step, Route):
        return await _run_step(_branch(step, text), text, run)
    if isinstance(step, Parallel):
        return "\n\n".join(await _gather([(s, text) for s in step.steps], run))
    if isinstance(step, Repeat):
        return await _repeat(step, text, run)
    if isinstance(step, Loop):
        return await _loop(step, text, run)
    if isinstance(step, When):
        return await _run_step(step.then if _holds(step, text, run) else step.else_, text, run)
    if isinstance(step, Sequence) and not isinstance(step, str):
        for inner in step:
            text = await _run_step(inner, text, run)
        return text
    if callable(step):
        return await _call(step, text)
    raise ConfigError(f"not a flow step: {step!r}", op="flow")


async def _ask(agent: Any, text: str, run: _Run) -> str:
    """An agent's answer to ``text``: ours in a fresh conversation, a look-alike through ``chat``."""
    if isinstance(agent, Agent):
        answer = await agent.astart(text)
    else:
        reply = await anyio.to_thread.run_sync(agent.chat, text)
        answer = reply if isinstance(reply, str) else str(reply)
    run.answered(str(getattr(agent, "name", type(agent).__name__)), answer)
    return answer


def _holds(step: When, text: str, run: _Run) -> bool:
    condition = step.condition
    if not isinstance(condition, str):
        return condition(text)
    if _conditions.is_template(condition):
        return _conditions.evaluate(condition, {**run.variables, "previous_output": text})
    return condition in text


def _branch(step: Route, text: str) -> Step | None:
    if step.key is not None:
        return step.routes.get(step.key(text), step.default)
    lowered = text.lower()
    for name, branch in step.routes.items():
        if name.lower() in lowered:
            return branch
    return step.default


async def _repeat(step: Repeat, text: str, run: _Run) -> str:
    for _ in range(step.max_iterations):
        text = await _run_step(step.step, text, run)
        if step.until is not None and step.until(text):
            break
    return text


async def _loop(step: Loop, text: str, run: _Run) -> str:
    items = step.items if step.items is not None else tuple(x for x in text.splitlines() if x.strip())
    if step.parallel:
        return "\n".join(await _gather([(step.step, item) for item in items], run))
    return "\n".join([await _run_step(step.step, item, run) for item in items])


async def _gather(steps: Sequence[tuple[Step, str]], run: _Run) -> list[str]:
    """Run each (step, input) concurrently; results in the order given."""
    results = [""] * len(steps)

    async def one(i: int) -> None:
        results[i] = await _run_step(steps[i][0], steps[i][1], run)

    async with anyio.create_task_group() as group:
        for i in range(len(steps)):
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
