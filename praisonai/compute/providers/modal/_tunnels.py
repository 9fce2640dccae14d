"""``expose`` on Modal: a port the config named (``ComputeConfig.ports``) goes through Modal's own
tunnel; any other port through the exec relay (``compute.forwards``): :class:`TunnelsFirst`.

Modal opens tunnels only for ports declared when the sandbox is created (``encrypted_ports``:
TLS ends at Modal's edge, the URL is ``https://<host>``), so the config names them up front and the
sandbox is tagged with them: another process that finds the sandbox knows which ports have a
tunnel without asking Modal (whose ``SandboxGetTunnels`` waits for tunnels that may never come).
A tunnel reaches the port from outside the sandbox: the server must listen on every address
(``0.0.0.0``), not the sandbox's own 127.0.0.1, which only the relay reaches.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from praisonai._errors import ProviderUnavailableError
from praisonai.compute.forwards import ExecRelay, Execute, StartProcess
from praisonai.compute.providers.modal import _sdk
from praisonai.compute.providers.modal._sdk import translated

#: the ports opened at creation, comma-separated, so another process finds the tunnels too
TAG_PORTS = "praisonai.modal.ports"
#: how long Modal may take to report a new sandbox's tunnels
TUNNEL_TIMEOUT_S = 50


def create_kwargs(ports: Iterable[int]) -> dict[str, Any]:
    """What ``Sandbox.create`` takes to open ``ports`` (TLS tunnels: HTTPS URLs a browser opens)."""
    ports = sorted(ports)
    return {"encrypted_ports": ports} if ports else {}


def tag(ports: Iterable[int]) -> dict[str, str]:
    """The tag recording ``ports`` on the sandbox (none when no port is declared)."""
    ports = sorted(ports)
    return {TAG_PORTS: ",".join(map(str, ports))} if ports else {}


def from_tags(tags: dict[str, str]) -> frozenset[int]:
    """The declared ports a sandbox's tags record (none for a sandbox made before this tag)."""
    return frozenset(int(p) for p in tags.get(TAG_PORTS, "").split(",") if p.isdigit())


async def url(sb: Any, port: int, instance_id: str) -> str:
    """The HTTPS URL of ``port``'s tunnel (declared at creation). Modal caches the tunnels on the
    handle, so a second call costs nothing and gives the same URL.

    Raises:
        ProviderUnavailableError: Modal reported no tunnel for the port in time.
    """
    modal = _sdk.load()
    try:
        with translated("expose", instance_id):
            tunnels = await sb.tunnels.aio(timeout=TUNNEL_TIMEOUT_S)
    except modal.exception.SandboxTimeoutError as exc:
        raise ProviderUnavailableError(
            f"Modal reported no tunnel of {instance_id!r} within {TUNNEL_TIMEOUT_S} s; retry later",
            op="expose",
        ) from exc
    tunnel = tunnels.get(port)
    if tunnel is None:
        raise ProviderUnavailableError(
            f"Modal opened no tunnel for port {port} of {instance_id!r}, declared at its creation",
            op="expose",
        )
    return f"https://{tunnel.host}" + ("" if tunnel.port == 443 else f":{tunnel.port}")


class TunnelsFirst(ExecRelay):
    """``ModalCompute``'s forwarder (``compute.abilities.ports``): ``tunnel(instance_id, port)`` is
    the URL of Modal's tunnel for a port declared at creation, ``None`` for any other port, which
    goes through the exec relay (``start`` and ``execute`` as ``ExecRelay``'s)."""

    def __init__(
        self, start: StartProcess, execute: Execute, tunnel: Callable[[str, int], Awaitable[str | None]]
    ) -> None:
        super().__init__(start, execute)
        self.tunnel = tunnel

    async def expose(self, instance_id: str, port: int) -> str:
        url = await self.tunnel(instance_id, port)
        return url if url is not None else await super().expose(instance_id, port)
