"""A port reached through the instance's exec stream: a small relay program started in the
instance per connection (``python3``, no socat needed) connects to ``localhost:PORT`` there and
copies bytes between that socket and its stdin/stdout. It needs no published port and no route
from this host to the instance, so it works under ``network: none`` and on remote engines."""

from __future__ import annotations

import contextlib
import queue
import threading
from typing import Any

from praisonai._limits import PORT_PROBE_TIMEOUT_S, PORT_RELAY_BACKLOG, PORT_RELAY_CHUNK
from praisonai.compute.ports._forwarder import Dial
from praisonai.runtime.transport import Transport

# Either side ending ends the relay: the port closed, or this host hung up (stdin's EOF).
_RELAY = f"""\
import os, socket, sys, threading
s = socket.create_connection(("localhost", int(sys.argv[1])))
def up():
    while data := os.read(0, {PORT_RELAY_CHUNK}):
        s.sendall(data)
    os._exit(0)
threading.Thread(target=up, daemon=True).start()
out = sys.stdout.buffer
while data := s.recv({PORT_RELAY_CHUNK}):
    out.write(data)
    out.flush()
os._exit(0)
"""

#: What ``expose`` checks the instance has before it forwards anything to it.
PROBE = "command -v python3 >/dev/null"
NEEDS = "the instance has no python3, which the port relay runs in it; use an image that has python3"


def relay_argv(port: int) -> list[str]:
    """The argv of the relay to ``port``, for a provider's ``_transport``."""
    return ["python3", "-I", "-S", "-c", _RELAY, str(port)]  # no site, no PYTHON* env: a fast, plain start


class TransportPipe:
    """A started transport as a ``Pipe``: its stdout queued by its reader thread, at most
    :data:`~praisonai._limits.PORT_RELAY_BACKLOG` reads ahead of the client (a slow client slows
    the reader, never fills this host's memory); its stderr (the relay's own failure, e.g. nothing
    listening) dropped, never shown as the port's bytes."""

    def __init__(self, transport: Transport) -> None:
        self._transport = transport
        self._out: queue.Queue[bytes] = queue.Queue(PORT_RELAY_BACKLOG)
        self._closed = threading.Event()
        transport.start(self._put, _drop, lambda: self._put(b""))

    def _put(self, data: bytes) -> None:
        while not self._closed.is_set():  # once closed nobody reads: the reader must not wait
            with contextlib.suppress(queue.Full):
                self._out.put(data, timeout=0.5)
                return

    def send(self, data: bytes) -> None:
        self._transport.send(data)

    def recv(self) -> bytes:
        return self._out.get()

    def close(self) -> None:
        self._closed.set()
        self._transport.close()


def _drop(_: bytes) -> None:
    pass


def exec_dial(provider: Any, instance_id: str, port: int) -> TransportPipe:
    """Start the relay to ``port`` through ``provider._transport`` (a ``ChannelMixin``'s)."""
    return TransportPipe(provider._transport(instance_id, relay_argv(port)))


async def expose_by_exec(provider: Any, instance_id: str, port: int, dial: Dial | None = None) -> str:
    """``_expose`` for a provider with a byte-stream channel: a forwarder on 127.0.0.1 whose
    connections each run the relay in the instance (checked first: the instance has python3);
    ``dial``: the provider's own way to each connection, which may fall back to that relay."""
    from praisonai._errors import UnsupportedFeatureError

    if not provider._port_forwards.holds(instance_id, port):
        probe = await provider.execute(instance_id, PROBE, timeout=PORT_PROBE_TIMEOUT_S)
        if probe.exit_code != 0:
            raise UnsupportedFeatureError(NEEDS, op="expose")
    forwards = provider._port_forwards
    return str(forwards.open(instance_id, port, dial or (lambda: exec_dial(provider, instance_id, port))))


class ExecRelayPorts:
    """``_expose`` for a provider with a byte-stream channel (``ChannelMixin``), listed before
    ``ComputeProvider`` in its bases: the docker pool (through each engine's API, also an
    ssh-reached one; a docker engine tries the container's address first, ``docker._ports``).
    Kubernetes port-forwards and falls back to ``exec_dial`` where that is refused
    (``providers.kubernetes._ports``); Modal calls ``expose_by_exec`` for a port it opened no
    tunnel for; E2B uses its own preview hosts (``providers.e2b._ports``)."""

    async def _expose(self, instance_id: str, port: int) -> str:
        return await expose_by_exec(self, instance_id, port)
