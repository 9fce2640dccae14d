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
    "ChannelClosedError": "praisonai._errors",
    "CommandFailedError": "praisonai._errors",
    "CommandTimeoutError": "praisonai._errors",
    "PathNotFoundError": "praisonai._errors",
    "PathOutsideWorkspaceError": "praisonai._errors",
    "ForeignInstanceError": "praisonai._errors",
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
    from praisonai._errors import AuthenticationError as AuthenticationError
    from praisonai._errors import ChannelClosedError as ChannelClosedError
    from praisonai._errors import CommandFailedError as CommandFailedError
    from praisonai._errors import CommandTimeoutError as CommandTimeoutError
    from praisonai._errors import ConfigError as ConfigError
    from praisonai._errors import EnvironmentFileError as EnvironmentFileError
    from praisonai._errors import ExecError as ExecError
    from praisonai._errors import ForeignInstanceError as ForeignInstanceError
    from praisonai._errors import HostKeyError as HostKeyError
    from praisonai._errors import ImageNotFoundError as ImageNotFoundError
    from praisonai._errors import InstanceNotFoundError as InstanceNotFoundError
    from praisonai._errors import ManagedSessionError as ManagedSessionError
    from praisonai._errors import MissingDependencyError as MissingDependencyError
    from praisonai._errors import PathNotFoundError as PathNotFoundError
    from praisonai._errors import PathOutsideWorkspaceError as PathOutsideWorkspaceError
    from praisonai._errors import PraisonAIError as PraisonAIError
    from praisonai._errors import ProviderUnavailableError as ProviderUnavailableError
    from praisonai._errors import ProvisionError as ProvisionError
    from praisonai._errors import SandboxClosedError as SandboxClosedError
    from praisonai._errors import UnknownProviderError as UnknownProviderError
    from praisonai._errors import UnsupportedFeatureError as UnsupportedFeatureError
    from praisonai._types import Capability as Capability
    from praisonai._types import ExecResult as ExecResult
    from praisonai._types import FileEntry as FileEntry
    from praisonai._types import InstanceInfo as InstanceInfo
    from praisonai._types import InstanceStatus as InstanceStatus
    from praisonai.agents import Agent as Agent
    from praisonai.agents import AgentFlow as AgentFlow
    from praisonai.agents import AgentTeam as AgentTeam
    from praisonai.agents import loop as loop
    from praisonai.agents import parallel as parallel
    from praisonai.agents import repeat as repeat
    from praisonai.agents import route as route
    from praisonai.agents import when as when
    from praisonai.compute.base import ComputeProvider as ComputeProvider
    from praisonai.compute.config import ComputeConfig as ComputeConfig
    from praisonai.compute.registry import available_providers as available_providers
    from praisonai.compute.registry import resolve_compute as resolve_compute
    from praisonai.compute.warm import WarmPool as WarmPool
    from praisonai.managed import AnthropicManagedAgent as AnthropicManagedAgent
    from praisonai.managed import HostedAgent as HostedAgent
    from praisonai.managed import HostedAgentConfig as HostedAgentConfig
    from praisonai.managed import LocalAgent as LocalAgent
    from praisonai.managed import LocalAgentConfig as LocalAgentConfig
    from praisonai.managed import LocalManagedConfig as LocalManagedConfig
    from praisonai.managed import ManagedAgent as ManagedAgent
    from praisonai.managed import ManagedConfig as ManagedConfig
    from praisonai.managed import ManagedResult as ManagedResult
    from praisonai.managed import SandboxedAgent as SandboxedAgent
    from praisonai.managed import SandboxedAgentConfig as SandboxedAgentConfig
    from praisonai.managed import SharedCompute as SharedCompute
    from praisonai.sandbox import AsyncSandbox as AsyncSandbox
    from praisonai.sandbox import Sandbox as Sandbox
    from praisonai.sandbox.environment import effective_config as effective_config


__getattr__ = lazy_exports(__name__, _EXPORTS)


def __dir__() -> list[str]:
    return sorted(__all__)
