"""PraisonAI's import paths under our name, so code written for PraisonAI imports unchanged:
``from praisonai.integrations import LocalAgent, LocalAgentConfig`` (its managed names, listed in
:data:`_EXPORTS`), the modules ``praisonai.integrations.managed_agents`` and ``managed_local``, and
``praisonai.integrations.compute`` (its compute providers). Nothing here is a second
implementation: each name is the one :mod:`praisonai.managed` or :mod:`praisonai.compute` defines.

The top layer: nothing in praisonai imports it. Importing it imports nothing else; a name loads its
module when first touched (no managed layer, no vendor SDK before that).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from praisonai._lazy import lazy_exports

_MANAGED_AGENTS = "praisonai.integrations.managed_agents"
_MANAGED_LOCAL = "praisonai.integrations.managed_local"

# PraisonAI's name -> the module of ours (PraisonAI's module path) that holds it
_EXPORTS = {
    "ManagedAgent": _MANAGED_AGENTS,
    "ManagedAgentIntegration": _MANAGED_AGENTS,
    "ManagedConfig": _MANAGED_AGENTS,
    "ManagedBackendConfig": _MANAGED_AGENTS,
    "AnthropicManagedAgent": _MANAGED_AGENTS,
    "HostedAgent": _MANAGED_AGENTS,
    "HostedAgentConfig": _MANAGED_AGENTS,
    "NetworkingType": _MANAGED_AGENTS,
    "NetworkingConfig": _MANAGED_AGENTS,
    "PackagesConfig": _MANAGED_AGENTS,
    "LocalManagedAgent": _MANAGED_LOCAL,
    "LocalManagedConfig": _MANAGED_LOCAL,
    "SandboxedAgent": _MANAGED_LOCAL,
    "SandboxedAgentConfig": _MANAGED_LOCAL,
    "LocalAgent": _MANAGED_LOCAL,
    "LocalAgentConfig": _MANAGED_LOCAL,
}

__all__ = list(_EXPORTS)

if TYPE_CHECKING:
    from praisonai.integrations.managed_agents import AnthropicManagedAgent as AnthropicManagedAgent
    from praisonai.integrations.managed_agents import HostedAgent as HostedAgent
    from praisonai.integrations.managed_agents import HostedAgentConfig as HostedAgentConfig
    from praisonai.integrations.managed_agents import ManagedAgent as ManagedAgent
    from praisonai.integrations.managed_agents import ManagedAgentIntegration as ManagedAgentIntegration
    from praisonai.integrations.managed_agents import ManagedBackendConfig as ManagedBackendConfig
    from praisonai.integrations.managed_agents import ManagedConfig as ManagedConfig
    from praisonai.integrations.managed_agents import NetworkingConfig as NetworkingConfig
    from praisonai.integrations.managed_agents import NetworkingType as NetworkingType
    from praisonai.integrations.managed_agents import PackagesConfig as PackagesConfig
    from praisonai.integrations.managed_local import LocalAgent as LocalAgent
    from praisonai.integrations.managed_local import LocalAgentConfig as LocalAgentConfig
    from praisonai.integrations.managed_local import LocalManagedAgent as LocalManagedAgent
    from praisonai.integrations.managed_local import LocalManagedConfig as LocalManagedConfig
    from praisonai.integrations.managed_local import SandboxedAgent as SandboxedAgent
    from praisonai.integrations.managed_local import SandboxedAgentConfig as SandboxedAgentConfig


__getattr__ = lazy_exports(__name__, _EXPORTS)


def __dir__() -> list[str]:
    return sorted(__all__)
