"""praisonai: run AI agents' shell and file tools in isolated instances behind one API.

Names are imported lazily on first use, so ``import praisonai`` stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from praisonai._lazy import lazy_exports

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS = {
    "AsyncSandbox": "praisonai.sandbox",
    "Sandbox": "praisonai.sandbox",
    "ComputeConfig": "praisonai.compute.config",
    "ComputeProvider": "praisonai.compute.base",
    "resolve_compute": "praisonai.compute.registry",
    "WarmPool": "praisonai.compute.warm",
    "effective_config": "praisonai.sandbox.environment",
    "available_providers": "praisonai.compute.registry",
    "ExecResult": "praisonai._types",
    "FileEntry": "praisonai._types",
    "InstanceInfo": "praisonai._types",
    "InstanceStatus": "praisonai._types",
    "Capability": "praisonai._types",
    "PraisonAIError": "praisonai._errors",
    "ConfigError": "praisonai._errors",
    "UnknownProviderError": "praisonai._errors",
    "UnsupportedFeatureError": "praisonai._errors",
    "MissingDependencyError": "praisonai._errors",
    "ProviderUnavailableError": "praisonai._errors",
    "HostKeyError": "praisonai._errors",
    "AuthenticationError": "praisonai._errors",
    "EnvironmentFileError": "praisonai._errors",
    "ImageNotFoundError": "praisonai._errors",
    "InstanceNotFoundError": "praisonai._errors",
    "SandboxClosedError": "praisonai._errors",
    "ProvisionError": "praisonai._errors",
    "ExecError": "praisonai._errors",
    "CommandFailedError": "praisonai._errors",
    "CommandTimeoutError": "praisonai._errors",
    "PathNotFoundError": "praisonai._errors",
    "PathOutsideWorkspaceError": "praisonai._errors",
    "Agent": "praisonai.agents",
    "AgentTeam": "praisonai.agents",
    "AgentFlow": "praisonai.agents",
    "route": "praisonai.agents",
    "parallel": "praisonai.agents",
    "repeat": "praisonai.agents",
    "loop": "praisonai.agents",
    "when": "praisonai.agents",
    "SharedCompute": "praisonai.managed",
    # PraisonAI's managed-agent names (praisonai.managed defines them)
    "ManagedAgent": "praisonai.managed",
    "ManagedResult": "praisonai.managed",
    "LocalManagedConfig": "praisonai.managed",
    "LocalAgent": "praisonai.managed",
    "LocalAgentConfig": "praisonai.managed",
    "SandboxedAgent": "praisonai.managed",
    "SandboxedAgentConfig": "praisonai.managed",
    "ManagedConfig": "praisonai.managed",
    "HostedAgentConfig": "praisonai.managed",
    "HostedAgent": "praisonai.managed",
    "AnthropicManagedAgent": "praisonai.managed",
    "ManagedSessionError": "praisonai._errors",
}

__all__ = ["__version__", *_EXPORTS]

if TYPE_CHECKING:
    from praisonai._errors import (
        AuthenticationError,
        CommandFailedError,
        CommandTimeoutError,
        ConfigError,
        EnvironmentFileError,
        ExecError,
        HostKeyError,
        ImageNotFoundError,
        InstanceNotFoundError,
        ManagedSessionError,
        MissingDependencyError,
        PathNotFoundError,
        PathOutsideWorkspaceError,
        PraisonAIError,
        ProviderUnavailableError,
        ProvisionError,
        SandboxClosedError,
        UnknownProviderError,
        UnsupportedFeatureError,
    )
    from praisonai._types import Capability, ExecResult, FileEntry, InstanceInfo, InstanceStatus
    from praisonai.agents import Agent, AgentFlow, AgentTeam, loop, parallel, repeat, route, when
    from praisonai.compute.base import ComputeProvider
    from praisonai.compute.config import ComputeConfig
    from praisonai.compute.registry import available_providers, resolve_compute
    from praisonai.compute.warm import WarmPool
    from praisonai.managed import (
        AnthropicManagedAgent,
        HostedAgent,
        HostedAgentConfig,
        LocalAgent,
        LocalAgentConfig,
        LocalManagedConfig,
        ManagedAgent,
        ManagedConfig,
        ManagedResult,
        SandboxedAgent,
        SandboxedAgentConfig,
        SharedCompute,
    )
    from praisonai.sandbox import AsyncSandbox, Sandbox
    from praisonai.sandbox.environment import effective_config


__getattr__ = lazy_exports(__name__, _EXPORTS)


def __dir__() -> list[str]:
    return sorted(__all__)
