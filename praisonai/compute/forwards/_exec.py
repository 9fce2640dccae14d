"""A port reached through the instance's exec stream: a small relay program started in the
instance per connection (``python3``, no socat needed) connects to ``localhost:PORT`` there and
copies bytes between that socket and its stdin/stdout. It needs no published port and no route
from this host to the instance, so it works under ``network: none`` and on remote engines."""

from __future__ import annotations

import contextlib
import functools
import queue
import threading
from collections.abc import Awaitable, Callable
from typing import Protocol

from praisonai._errors import UnsupportedFeatureError
from praisonai._limits import PORT_PROBE_TIMEOUT_S, PORT_RELAY_BACKLOG, PORT_RELAY_CHUNK
from praisonai._types import ExecResult
from praisonai.compute.forwards._forward import Pipe
from praisonai.compute.forwards._forwards import LoopbackForwarder
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


#: How a provider starts ``argv`` in the instance with its stdin and stdout attached (a
#: ``ChannelMixin``'s ``_transport``).
StartProcess = Callable[[str, list[str]], Transport]


class Execute(Protocol):
    """The provider's public ``execute``, as the probe calls it."""

    def __call__(self, instance_id: str, command: str, timeout: float) -> Awaitable[ExecResult]: ...


def relay(start: StartProcess, instance_id: str, port: int) -> TransportPipe:
    """One connection to ``port``: the relay started in the instance through ``start``."""
    return TransportPipe(start(instance_id, relay_argv(port)))


class ExecRelay(LoopbackForwarder):
    """The forwarder of a provider with a byte-stream channel: a forward on 127.0.0.1 whose
    connections each run the relay in the instance (checked first with ``execute``: the instance
    has python3). The docker pool uses it as it is (through each engine's API, also an ssh-reached
    one); a docker engine dials the container's address first (``docker._ports``), Modal serves a
    port it opened a tunnel for itself (``modal._tunnels``); kubernetes port-forwards and falls
    back to :func:`relay` where that is refused (``kubernetes._ports``)."""

    def __init__(self, start: StartProcess, execute: Execute) -> None:
        super().__init__()
        self.start = start
        self.execute = execute

    async def expose(self, instance_id: str, port: int) -> str:
        if not self.forwards.holds(instance_id, port):
            probe = await self.execute(instance_id, PROBE, timeout=PORT_PROBE_TIMEOUT_S)
            if probe.exit_code != 0:
                raise UnsupportedFeatureError(NEEDS, op="expose")
        return self.forwards.open(instance_id, port, functools.partial(self.dial, instance_id, port))

    def dial(self, instance_id: str, port: int) -> Pipe:
        """One connection's stream to ``port`` (called in the forward's thread): the relay."""
        return relay(self.start, instance_id, port)
