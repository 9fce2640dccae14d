"""A docker instance's port (``expose``): a forward on this host's 127.0.0.1 whose connections
go straight to the container's bridge address when this host can route to it (a local engine, a
server listening on the container's every address: raw speed), else through the relay exec'd in
the container (``compute.forwards``: a server bound to the container's own 127.0.0.1, ``network:
none``, a remote engine; one ``docker exec`` per connection).

Docker cannot publish a port on a running container, and one published at create would have to be
named in advance: neither is needed here. The instance decides nothing about where this host
connects: the address comes from the engine, asked again at each connection."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

from praisonai._limits import PORT_DIRECT_CONNECT_S
from praisonai.compute.forwards import ExecRelay, Execute, Pipe, SocketPipe, StartProcess, relay
from praisonai.compute.providers.docker._client import container_name


class DockerForwarder(ExecRelay):
    """``DockerEngine``'s forwarder: ``start`` and ``execute`` as ``ExecRelay``'s; ``local``:
    whether this host can route to the engine's containers (a local engine), asked at each
    connection; ``inspect``: the engine's inspection of a container by name (blocking)."""

    def __init__(
        self,
        start: StartProcess,
        execute: Execute,
        local: Callable[[], bool],
        inspect: Callable[[str], dict[str, Any]],
    ) -> None:
        super().__init__(start, execute)
        self.local = local
        self.inspect = inspect

    def dial(self, instance_id: str, port: int) -> Pipe:
        # Asked at each connection, never remembered: a removed container's address may be
        # another instance's by now.
        for address in _addresses(self.inspect(container_name(instance_id))) if self.local() else []:
            try:
                return SocketPipe(socket.create_connection((address, port), PORT_DIRECT_CONNECT_S))
            except OSError:
                continue  # not listening there (bound to the container's loopback): relay
        return relay(self.start, instance_id, port)


def _addresses(inspected: dict[str, Any]) -> list[str]:
    """The container's addresses on its networks (none under ``network: none``), while it runs."""
    if not (inspected.get("State") or {}).get("Running"):
        return []
    networks = (inspected.get("NetworkSettings") or {}).get("Networks") or {}
    return [n["IPAddress"] for n in networks.values() if n.get("IPAddress")]
