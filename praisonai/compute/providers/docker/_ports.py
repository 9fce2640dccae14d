"""A docker instance's port (``expose``): a forwarder on this host's 127.0.0.1 whose connections
go straight to the container's bridge address when this host can route to it (a local engine, a
server listening on the container's every address: raw speed), else through the relay exec'd in
the container (``compute.ports``: a server bound to the container's own 127.0.0.1, ``network:
none``, a remote engine; one ``docker exec`` per connection).

Docker cannot publish a port on a running container, and one published at create would have to be
named in advance: neither is needed here. The instance decides nothing about where this host
connects: the address comes from the engine, asked again at each connection."""

from __future__ import annotations

import socket
from typing import Any

from praisonai._limits import PORT_DIRECT_CONNECT_S
from praisonai.compute.ports import ExecRelayPorts, Pipe, SocketPipe, exec_dial, expose_by_exec
from praisonai.compute.providers.docker._client import container_name


class DockerPorts(ExecRelayPorts):
    """``_expose`` for ``DockerEngine`` (listed before ``ComputeProvider`` in its bases)."""

    async def _expose(self, instance_id: str, port: int) -> str:
        engine: Any = self  # a DockerEngine: this mixin is one of its bases
        local = engine._engine_is_local()

        def dial() -> Pipe:
            # Asked at each connection, never remembered: a removed container's address may be
            # another instance's by now.
            for address in _addresses(engine._inspect_now(container_name(instance_id))) if local else []:
                try:
                    return SocketPipe(socket.create_connection((address, port), PORT_DIRECT_CONNECT_S))
                except OSError:
                    continue  # not listening there (bound to the container's loopback): relay
            return exec_dial(self, instance_id, port)

        return await expose_by_exec(self, instance_id, port, dial)


def _addresses(inspected: dict[str, Any]) -> list[str]:
    """The container's addresses on its networks (none under ``network: none``), while it runs."""
    if not (inspected.get("State") or {}).get("Running"):
        return []
    networks = (inspected.get("NetworkSettings") or {}).get("Networks") or {}
    return [n["IPAddress"] for n in networks.values() if n.get("IPAddress")]
