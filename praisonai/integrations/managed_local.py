"""PraisonAI's ``praisonai.integrations.managed_local`` (and the names of its ``local_agent`` and
``sandboxed_agent``): the local loop. Each name is our :class:`~praisonai.managed.ManagedAgent`
or :class:`~praisonai.managed.LocalManagedConfig`, which accept PraisonAI's ``compute=`` and
``tools_run_on=`` alike."""

from praisonai.managed import (
    LocalAgent,
    LocalAgentConfig,
    LocalManagedConfig,
    SandboxedAgent,
    SandboxedAgentConfig,
)

LocalManagedAgent = LocalAgent

__all__ = [
    "LocalAgent",
    "LocalAgentConfig",
    "LocalManagedAgent",
    "LocalManagedConfig",
    "SandboxedAgent",
    "SandboxedAgentConfig",
]
