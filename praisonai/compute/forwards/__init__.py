"""Forwards: the machinery behind the ports ability (``compute.abilities.ports``), a port inside an
instance as a URL on this host's loopback.

``_forward``: one forward, a TCP listener on 127.0.0.1 whose connections are relayed through a
stream a provider dials into the instance; ``_forwards``: a provider's forwards by instance and port,
and the base of a forwarder that serves its URLs through them; ``_exec``: the stream of a provider
with a byte-stream channel (a relay program exec'd in the instance per connection) and its
forwarder, ``ExecRelay``. Providers with a native way (an SSH forward, a vendor's preview link)
use their own; docs/workbench.md says which provider does what.
"""

from __future__ import annotations

from praisonai.compute.forwards._exec import (
    NEEDS,
    PROBE,
    ExecRelay,
    Execute,
    StartProcess,
    TransportPipe,
    relay,
    relay_argv,
)
from praisonai.compute.forwards._forward import Dial, Forward, Pipe, SocketPipe
from praisonai.compute.forwards._forwards import Forwards, LoopbackForwarder

__all__ = [
    "NEEDS",
    "PROBE",
    "Dial",
    "ExecRelay",
    "Execute",
    "Forward",
    "Forwards",
    "LoopbackForwarder",
    "Pipe",
    "SocketPipe",
    "StartProcess",
    "TransportPipe",
    "relay",
    "relay_argv",
]
