"""AgentTeam: agents that work one after another (each sees the previous answer) or all at once."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Literal

import anyio

from praisonai._errors import ConfigError
from praisonai.agents._run import AgentOutput, RunResult, run_async, run_sync, workspace_keywords
from praisonai.agents.agent import Agent
from praisonai.managed.tools_place import one_place

Process = Literal["sequential", "parallel"]


class AgentTeam:
    """A team of agents, optionally sharing one remote instance for their tools.

    Args:
        agents: the team, in order.
        tasks: one task description per agent (each agent gets its own), or None (each gets the prompt).
        process: ``"sequential"``: each agent's answer is passed as context to the next, and the
            result's text is the last answer; ``"parallel"``: all run concurrently on the same input,
            and the result's text joins every answer under its agent's name.
        compute: None (tools run where they are), or a provider name or instance: the run happens
            inside ``praisonai.managed.SharedCompute(compute)``, which gives every agent shell and file
            tools on one shared instance and tears it down afterwards, even on error. An agent
            with its own ``tools_run_on`` or ``backend`` keeps it. An unknown name, or a provider
            whose SDK is missing, is refused here.
        tools_run_on: PraisonAI's name for ``compute`` (both may be given when they name the
            same place).
        workspace, repo, repo_token_env: a local tree uploaded into the instance's working dir,
            or a git ``URL[@REF]`` cloned there (its token read from that variable), before the
            first agent runs; the result's ``diff`` holds the changes. Need ``compute``.
    """

    def __init__(
        self,
        agents: Sequence[Agent],
        tasks: Sequence[str] | None = None,
        process: Process = "sequential",
        compute: Any = None,
        tools_run_on: Any = None,
        *,
        workspace: str | os.PathLike[str] | None = None,
        repo: str | None = None,
        repo_token_env: str | None = None,
    ) -> None:
        if not agents:
            raise ConfigError("an AgentTeam needs at least one agent", op="team")
        if tasks is not None and len(tasks) != len(agents):
            raise ConfigError(f"{len(tasks)} tasks for {len(agents)} agents; give one per agent", op="team")
        if process not in ("sequential", "parallel"):
            raise ConfigError(f"unknown process {process!r}; use 'sequential' or 'parallel'", op="team")
        self.agents = list(agents)
        self.tasks = list(tasks) if tasks is not None else None
        self.process = process
        self.compute = one_place("AgentTeam", compute=compute, tools_run_on=tools_run_on)
        self.workspace = workspace_keywords(
            "AgentTeam", self.compute, workspace=workspace, repo=repo, repo_token_env=repo_token_env
        )

    @property
    def tools_run_on(self) -> Any:
        """PraisonAI's name for :attr:`compute`."""
        return self.compute

    def start(self, prompt: str | None = None) -> RunResult:
        """Run the team (blocking); see the class docstring for what the result holds."""
        return run_sync(self.compute, self.agents, self.workspace, lambda: self._run(prompt))

    async def astart(self, prompt: str | None = None) -> RunResult:
        """Async :meth:`start`."""
        return await run_async(self.compute, self.agents, self.workspace, lambda: self._run(prompt))

    #: PraisonAI's name (its ``AgentTeam.run``) for :meth:`start`.
    run = start

    async def _run(self, prompt: str | None) -> RunResult:
        if prompt is None and self.tasks is None:
            raise ConfigError("give the team a prompt, tasks, or both", op="team")
        if self.process == "parallel":
            return await self._parallel(prompt)
        return await self._sequential(prompt)

    async def _sequential(self, prompt: str | None) -> RunResult:
        outputs: list[AgentOutput] = []
        for i, agent in enumerate(self.agents):
            previous = outputs[-1] if outputs else None
            text = await agent.astart(self._message(i, prompt, previous))
            outputs.append(AgentOutput(agent.name, text))
        return RunResult(outputs[-1].text, tuple(outputs))

    async def _parallel(self, prompt: str | None) -> RunResult:
        texts: list[str] = [""] * len(self.agents)

        async def run(i: int, agent: Agent) -> None:
            texts[i] = await agent.astart(self._message(i, prompt, None))

        async with anyio.create_task_group() as group:
            for i, agent in enumerate(self.agents):
                group.start_soon(run, i, agent)
        outputs = tuple(AgentOutput(a.name, t) for a, t in zip(self.agents, texts, strict=True))
        return RunResult("\n\n".join(f"## {o.agent}\n{o.text}" for o in outputs), outputs)

    def _message(self, i: int, prompt: str | None, previous: AgentOutput | None) -> str:
        parts = [prompt] if prompt else []
        if self.tasks is not None:
            parts.append(f"Your task: {self.tasks[i]}")
        if previous is not None:
            parts.append(f"Context from the previous agent ({previous.agent}):\n{previous.text}")
        return "\n\n".join(parts)
