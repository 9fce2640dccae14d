"""PraisonAI's remaining public managed names, as PraisonAI defines them in
``praisonai.integrations.managed_agents``: the typed ``networking`` and ``packages`` values of a
config (:class:`NetworkingType`, :class:`NetworkingConfig`, :class:`PackagesConfig`) and
:class:`HostedAgent`, its name for the hosted loop.

Nothing here is a second implementation: the configs read these shapes
(:func:`praisonai.compute.config.network_from_praisonai`, :func:`parse_packages`), and
:class:`HostedAgent` is :class:`ManagedAgent` with ``provider="anthropic"``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from praisonai.managed.agent import ManagedAgent


class NetworkingType(str, Enum):
    """PraisonAI's networking kinds. ``"none"`` (no network at all) is ours, accepted as a string."""

    UNRESTRICTED = "unrestricted"
    LIMITED = "limited"


@dataclass
class NetworkingConfig:
    """A config's ``networking``, typed: ``LIMITED`` with ``allowed_hosts`` is the instance's
    allowlist (where its provider enforces one; refused in one sentence where it cannot), ``LIMITED``
    without hosts no network. ``allow_mcp_servers`` and ``allow_package_managers`` are the hosted
    API's switches; an instance of ours reaches exactly the hosts listed."""

    type: NetworkingType = NetworkingType.UNRESTRICTED
    allowed_hosts: list[str] | None = None
    allow_mcp_servers: bool = True
    allow_package_managers: bool = True


@dataclass
class PackagesConfig:
    """A config's ``packages``, typed, per manager. PraisonAI lists six managers; our instances
    install ``pip``, ``apt`` and ``npm``, and a config naming another is refused in one sentence
    (before anything is provisioned)."""

    pip: list[str] | None = None
    npm: list[str] | None = None
    apt: list[str] | None = None
    cargo: list[str] | None = None
    gem: list[str] | None = None
    go: list[str] | None = None

    def to_dict(self) -> dict[str, list[str]]:
        """The managers that list packages, as the ``packages`` dict (what the configs read)."""
        return {manager: list(names) for manager, names in vars(self).items() if names}


class HostedAgent(ManagedAgent):
    """PraisonAI's name for the hosted loop (Claude Managed Agents): ``ManagedAgent`` with
    ``provider="anthropic"`` unless another provider is given. Its config is a
    :class:`~praisonai.managed.ManagedConfig` (``HostedAgentConfig``)."""

    def __init__(self, provider: str | None = "anthropic", **kwargs: Any) -> None:
        super().__init__(provider=provider, **kwargs)


#: PraisonAI's older name for its hosted class.
AnthropicManagedAgent = HostedAgent
