"""An SSH instance's port: a ``direct-tcpip`` channel per connection to ``127.0.0.1:PORT`` on its
host (``ssh -L``), over the provider's own connections, behind a forwarder on this host's loopback
(``compute.forwards``). The instance's processes run on the host, so their ports are the host's."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from praisonai._errors import ProviderUnavailableError, UnsupportedFeatureError
from praisonai._limits import PORT_RELAY_CHUNK
from praisonai.compute._threads import run_blocking
from praisonai.compute.forwards import LoopbackForwarder
from praisonai.compute.providers.ssh._link import _OPEN_TIMEOUT_S, HostLink

if TYPE_CHECKING:
    import paramiko

_PROHIBITED = 1  # RFC 4254's SSH_OPEN_ADMINISTRATIVELY_PROHIBITED: sshd's AllowTcpForwarding no


class ChannelPipe:
    """A ``direct-tcpip`` channel as a ``compute.forwards.Pipe``."""

    def __init__(self, channel: paramiko.Channel) -> None:
        self._channel = channel

    def send(self, data: bytes) -> None:
        self._channel.sendall(data)

    def recv(self) -> bytes:
        try:
            return bytes(self._channel.recv(PORT_RELAY_CHUNK))
        except (OSError, EOFError):
            return b""

    def close(self) -> None:
        self._channel.close()


def dial(link: HostLink, port: int) -> ChannelPipe:
    """A channel to ``127.0.0.1:port`` on the host (raises when nothing listens there)."""
    import paramiko

    for transport in link.transports():
        try:
            channel = transport.open_channel(
                "direct-tcpip", ("127.0.0.1", port), ("127.0.0.1", 0), timeout=_OPEN_TIMEOUT_S
            )
        except paramiko.ChannelException as exc:
            if exc.code == _PROHIBITED:
                raise UnsupportedFeatureError(
                    f"{link.host.label} refuses port forwarding (sshd's AllowTcpForwarding), so its "
                    f"instances' ports cannot be exposed; allow it there or choose another provider",
                    op="expose",
                ) from None
            raise  # nothing listens there (yet): this connection fails, later ones may not
        return ChannelPipe(channel)
    raise ProviderUnavailableError(f"no connection to {link.host.label}", op="expose")


def check_allowed(link: HostLink, port: int) -> None:
    """Refuse now, in one sentence, when the host forbids forwarding (nothing listening is fine)."""
    import paramiko

    with contextlib.suppress(paramiko.ChannelException):
        dial(link, port).close()


class SshForwarder(LoopbackForwarder):
    """``SSHCompute``'s forwarder (``compute.abilities.ports``), built from ``link_of``: the
    connections to the instance's host (the instance is looked up: an unknown one raises)."""

    def __init__(self, link_of: Callable[[str], Awaitable[HostLink]]) -> None:
        super().__init__()
        self.link_of = link_of

    async def expose(self, instance_id: str, port: int) -> str:
        """The URL of this process's forward to ``port`` on the instance's host, started (after
        the host said it allows forwarding) on first use."""
        link = await self.link_of(instance_id)
        if not self.forwards.holds(instance_id, port):
            await run_blocking(check_allowed, link, port)
        return self.forwards.open(instance_id, port, lambda: dial(link, port))
