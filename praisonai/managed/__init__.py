"""Agents whose tools run remotely: one instance shared by a team (SharedCompute), and agents whose
sessions persist and resume from any process (ManagedAgent).

Every name loads on first use, so ``import praisonai.managed`` (the CLI's managed commands, or an
agent that only reads the sessions store) stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from praisonai._lazy import lazy_exports

_LAZY = {
    "BRIDGED_TOOL_NAMES": "praisonai.managed.shared",
    "CAPABILITY_PROMPT": "praisonai.managed.shared",
    "AuditEntry": "praisonai.managed.shared",
    "SharedCompute": "praisonai.managed.shared",
    "ManagedAgent": "praisonai.managed.agent",
    "LocalAgent": "praisonai.managed.agent",
    "SandboxedAgent": "praisonai.managed.agent",
    "HostedAgent": "praisonai.managed.praisonai_types",
    "AnthropicManagedAgent": "praisonai.managed.praisonai_types",
    "NetworkingType": "praisonai.managed.praisonai_types",
    "NetworkingConfig": "praisonai.managed.praisonai_types",
    "PackagesConfig": "praisonai.managed.praisonai_types",
    "ManagedResult": "praisonai.managed.live._result",
    "ToolRequest": "praisonai.managed.live._result",
    "LocalManagedConfig": "praisonai.managed.config",
    "ManagedConfig": "praisonai.managed.config",
    "HostedAgentConfig": "praisonai.managed.config",
    "LocalAgentConfig": "praisonai.managed.config",
    "SandboxedAgentConfig": "praisonai.managed.config",
    "Event": "praisonai.managed.events",
    "SessionStore": "praisonai.managed.store",
    "SqliteSessionStore": "praisonai.managed.store",
}

__all__ = [
    "BRIDGED_TOOL_NAMES",
    "CAPABILITY_PROMPT",
    "AnthropicManagedAgent",
    "AuditEntry",
    "Event",
    "HostedAgent",
    "HostedAgentConfig",
    "LocalAgent",
    "LocalAgentConfig",
    "LocalManagedConfig",
    "ManagedAgent",
    "ManagedConfig",
    "ManagedResult",
    "NetworkingConfig",
    "NetworkingType",
    "PackagesConfig",
    "SandboxedAgent",
    "SandboxedAgentConfig",
    "SessionStore",
    "SharedCompute",
    "SqliteSessionStore",
    "ToolRequest",
]

if TYPE_CHECKING:
    from praisonai.managed.agent import LocalAgent as LocalAgent
    from praisonai.managed.agent import ManagedAgent as ManagedAgent
    from praisonai.managed.agent import SandboxedAgent as SandboxedAgent
    from praisonai.managed.config import HostedAgentConfig as HostedAgentConfig
    from praisonai.managed.config import LocalAgentConfig as LocalAgentConfig
    from praisonai.managed.config import LocalManagedConfig as LocalManagedConfig
    from praisonai.managed.config import ManagedConfig as ManagedConfig
    from praisonai.managed.config import SandboxedAgentConfig as SandboxedAgentConfig
    from praisonai.managed.events import Event as Event
    from praisonai.managed.live._result import ManagedResult as ManagedResult
    from praisonai.managed.live._result import ToolRequest as ToolRequest
    from praisonai.managed.praisonai_types import AnthropicManagedAgent as AnthropicManagedAgent
    from praisonai.managed.praisonai_types import HostedAgent as HostedAgent
    from praisonai.managed.praisonai_types import NetworkingConfig as NetworkingConfig
    from praisonai.managed.praisonai_types import NetworkingType as NetworkingType
    from praisonai.managed.praisonai_types import PackagesConfig as PackagesConfig
    from praisonai.managed.shared import BRIDGED_TOOL_NAMES as BRIDGED_TOOL_NAMES
    from praisonai.managed.shared import CAPABILITY_PROMPT as CAPABILITY_PROMPT
    from praisonai.managed.shared import AuditEntry as AuditEntry
    from praisonai.managed.shared import SharedCompute as SharedCompute
    from praisonai.managed.store import SessionStore as SessionStore
    from praisonai.managed.store import SqliteSessionStore as SqliteSessionStore


__getattr__ = lazy_exports(__name__, _LAZY)
