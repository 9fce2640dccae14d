"""The agent layer: Agent (a bounded tool loop), AgentTeam and AgentFlow (orchestration)."""

from praisonai.agents._run import AgentOutput, RunResult
from praisonai.agents.agent import Agent
from praisonai.agents.flow import AgentFlow, loop, parallel, repeat, route, when
from praisonai.agents.team import AgentTeam
from praisonai.llm.types import Usage

__all__ = [
    "Agent",
    "AgentFlow",
    "AgentOutput",
    "AgentTeam",
    "RunResult",
    "Usage",
    "loop",
    "parallel",
    "repeat",
    "route",
    "when",
]
