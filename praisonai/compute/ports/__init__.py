"""Ports: a port inside an instance as a URL on this host (``ComputeProvider.expose``).

``_forwarder``: a TCP forwarder on 127.0.0.1 whose connections are relayed through a stream a
provider dials into the instance; ``_forwards``: a provider's forwarders by instance and port;
``_exec``: the stream of a provider with a byte-stream channel (a relay program exec'd in the
instance per connection). Providers with a native way (an SSH forward, a vendor's preview link)
use their own; docs/workbench.md says which provider does what.
"""

from __future__ import annotations

from praisonai.compute.ports._exec import (
    NEEDS,
    PROBE,
    ExecRelayPorts,
    TransportPipe,
    exec_dial,
    expose_by_exec,
    relay_argv,
)
from praisonai.compute.ports._forwarder import Dial, Forwarder, Pipe, SocketPipe
from praisonai.compute.ports._forwards import Forwards

__all__ = [
    "NEEDS",
    "PROBE",
    "Dial",
    "ExecRelayPorts",
    "Forwarder",
    "Forwards",
    "Pipe",
    "SocketPipe",
    "TransportPipe",
    "exec_dial",
    "expose_by_exec",
    "relay_argv",
]
