"""What a managed agent is: its config (the local loop's :class:`LocalManagedConfig`, the hosted
backend's :class:`ManagedConfig`), its tools and their permissions, the compute fields it may
carry, and the record and hash a store keeps of it."""

from praisonai.managed.config._hosted import HostedAgentConfig, ManagedConfig
from praisonai.managed.config._local import (
    DEFAULT_SYSTEM,
    INSTANCE_TOOL_NAMES,
    RECORD_SCHEMA,
    CustomTool,
    LocalAgentConfig,
    LocalManagedConfig,
    Permission,
    SandboxedAgentConfig,
    ToolPlan,
    check_host_packages,
    compute_fields,
    config_hash,
    config_record,
    parse_packages,
    resolve_tools,
)

__all__ = [
    "DEFAULT_SYSTEM",
    "INSTANCE_TOOL_NAMES",
    "RECORD_SCHEMA",
    "CustomTool",
    "HostedAgentConfig",
    "LocalAgentConfig",
    "LocalManagedConfig",
    "ManagedConfig",
    "Permission",
    "SandboxedAgentConfig",
    "ToolPlan",
    "check_host_packages",
    "compute_fields",
    "config_hash",
    "config_record",
    "parse_packages",
    "resolve_tools",
]
