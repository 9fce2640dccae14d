"""Egress: the part that keeps an instance's traffic to its network allowlist (``network: {allow:
[...]}``) by putting it behind an egress proxy of the provider's own (``compute.egress``: docker's
internal network, kubernetes' proxy pod). Held as a provider's ``egress``.

It brings no capability of its own: ``Capability.NETWORK_ALLOWLIST`` says that the provider
honours allowlists, and a cloud vendor does that with no part of ours (the allowlist goes into its
create request, which its API enforces), so every provider that honours them declares the flag.
"""

from __future__ import annotations

from typing import Protocol

from praisonai.compute.config import ComputeConfig


class Egress(Protocol):
    """What provisioning asks of the provider's egress proxy."""

    def hosts(self, cfg: ComputeConfig) -> list[str] | None:
        """The entries of ``cfg``'s allowlist that go through the proxy, normalized and checked;
        ``None`` when its network is not an allowlist.

        Raises:
            ConfigError: an entry the proxy cannot match (a port; docker: a CIDR block).
        """

    async def sweep(self, op: str) -> None:
        """Remove each proxy that no instance is behind any more (after ``op`` removed or paused
        one); one of another home's, or one being made, is left alone."""
