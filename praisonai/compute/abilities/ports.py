"""Ports: a port of the instance as a URL the caller can open. Turned on by ``Capability.PORTS``.

A provider with ``ports`` implements ``_expose``: a URL on this host's loopback (a relay through
the instance's exec stream, an SSH forward, the port itself where the instance shares the host's
network) or the vendor's own (a preview link, a tunnel). The public ``expose`` on
``ComputeProvider`` checks the id and the port and calls this hook; without the capability it
refuses with one sentence.
"""

from __future__ import annotations

from praisonai._errors import ConfigError
from praisonai._types import Capability
from praisonai.compute.abilities._refusal import Refusal
from praisonai.compute.ports import Forwards


class Ports(Refusal):
    """The ports method and hook of the provider contract."""

    async def expose(self, instance_id: str, port: int) -> str:
        """A URL the caller can open that reaches ``port`` inside the instance (something must
        listen there). A forward lives on 127.0.0.1 only, as long as this provider object or the
        instance; the same port gives the same URL again. See ``compute.abilities.ports``.

        Raises:
            ConfigError: ``port`` is not a TCP port number (1-65535).
            UnsupportedFeatureError: the provider lacks ``Capability.PORTS`` or cannot reach it.
            InstanceNotFoundError: no such instance.
        """
        self._check_id(instance_id)
        if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
            raise ConfigError(f"port {port!r} is not a TCP port; give one from 1 to 65535", op="expose")
        if Capability.PORTS not in self.capabilities:
            raise self._unsupported("exposing ports", "expose", Capability.PORTS)
        return await self._expose(instance_id, port)

    async def _expose(self, instance_id: str, port: int) -> str:
        """A URL (``http://127.0.0.1:N`` for a forward) that reaches ``port`` inside the instance
        for as long as this provider object (and the instance) lives; the same URL for the same
        port on a second call."""
        raise self._unsupported("exposing ports", "expose", Capability.PORTS)

    @property
    def _port_forwards(self) -> Forwards:
        """This provider object's forwarders (``compute.ports``), made on first use."""
        found: Forwards | None = self.__dict__.get("_forwards")
        if found is None:
            found = self.__dict__["_forwards"] = Forwards()
        return found

    def stop_forwards(self, instance_id: str) -> None:
        """Stop this process's forwards to the instance: nothing listens on their URLs afterwards
        (``shutdown`` does it too; a ``Sandbox`` handle does it when closed)."""
        self._port_forwards.close(instance_id)

    def forwarding(self, instance_id: str, port: int) -> bool:
        """Whether ``expose`` started a forwarder in this process for that port: its URL works
        only while this process runs (the CLI's ``compute port`` then stays in the foreground)."""
        return self._port_forwards.holds(instance_id, port)
