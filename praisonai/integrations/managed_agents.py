"""PraisonAI's ``praisonai.integrations.managed_agents``: its managed-agent names, each ours.

``ManagedAgent`` is one class here (PraisonAI's is a factory choosing a class by ``provider``; ours
reads the same values, see :func:`praisonai.managed.agent._backend.choose_backend`); ``HostedAgent`` and
``AnthropicManagedAgent`` are it with ``provider="anthropic"``; ``ManagedAgentIntegration`` and
``ManagedBackendConfig`` are PraisonAI's older names.
"""

from praisonai.managed import HostedAgentConfig, ManagedAgent, ManagedConfig
from praisonai.managed.praisonai_types import (
    AnthropicManagedAgent,
    HostedAgent,
    NetworkingConfig,
    NetworkingType,
    PackagesConfig,
)

ManagedAgentIntegration = ManagedAgent
ManagedBackendConfig = ManagedConfig

__all__ = [
    "AnthropicManagedAgent",
    "HostedAgent",
    "HostedAgentConfig",
    "ManagedAgent",
    "ManagedAgentIntegration",
    "ManagedBackendConfig",
    "ManagedConfig",
    "NetworkingConfig",
    "NetworkingType",
    "PackagesConfig",
]
