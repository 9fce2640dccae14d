"""ManagedAgent: an agent loop whose sessions persist and resume from any process (see
:mod:`praisonai.managed.agent._agent`); ``LocalAgent`` and ``SandboxedAgent`` are PraisonAI's
names of it."""

from praisonai.managed.agent._agent import LocalAgent, ManagedAgent, SandboxedAgent

__all__ = ["LocalAgent", "ManagedAgent", "SandboxedAgent"]
