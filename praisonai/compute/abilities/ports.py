"""Ports: a port of the instance as a URL the caller can open. Held as a part: a provider's
``forwarder`` (``Capability.PORTS`` comes with it).

A forwarder gives a URL on this host's loopback (a relay through the instance's exec stream, an
SSH forward, the port itself where the instance shares the host's network: the machinery is
``compute.forwards``) or the vendor's own (a preview link, a tunnel). The public ``expose`` of
``ComputeProvider`` checks the id and the port and asks it; without one it refuses with one
sentence. Shutting an instance down (or closing its ``Sandbox``) asks the part to ``stop``.
"""

from __future__ import annotations

from typing import Protocol


class Forwarder(Protocol):
    """The part that makes an instance's port a URL."""

    async def expose(self, instance_id: str, port: int) -> str:
        """A URL (``http://127.0.0.1:N`` for a forward) that reaches ``port`` inside the instance
        for as long as this provider object (and the instance) lives; the same URL for the same
        port on a second call. The id and the port are checked already."""

    def stop(self, instance_id: str) -> None:
        """Stop this process's forwards to the instance (nothing listens on their URLs after)."""

    def forwarding(self, instance_id: str, port: int) -> bool:
        """Whether a forward of this process serves that port (its URL dies with the process)."""


class NoForwards:
    """The base of a forwarder whose URLs need nothing of this process (a vendor's preview link,
    the host's own port): nothing to stop, and ``forwarding`` is False; a subclass writes
    ``expose``."""

    def stop(self, instance_id: str) -> None:
        """Nothing: no forward of this process serves the instance."""

    def forwarding(self, instance_id: str, port: int) -> bool:
        """False: the URL works without this process."""
        return False
