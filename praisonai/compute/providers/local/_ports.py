"""A local instance's port is this host's own: its processes share the host's network
(bubblewrap's ``--share-net``), so no forward is needed. Under ``network: none`` each of its
processes has a loopback of its own, which nothing outside that process can reach."""

from __future__ import annotations

from collections.abc import Callable

from praisonai._errors import UnsupportedFeatureError
from praisonai.compute.abilities import NoForwards


class HostPorts(NoForwards):
    """``LocalCompute``'s forwarder (``compute.abilities.ports``), built from ``network_of``: the
    network an instance was made with (an unknown one raises ``InstanceNotFoundError``)."""

    def __init__(self, network_of: Callable[[str], str]) -> None:
        self.network_of = network_of

    async def expose(self, instance_id: str, port: int) -> str:
        if self.network_of(instance_id) == "none":
            raise UnsupportedFeatureError(
                f"instance {instance_id} has no network (network: none), so nothing outside it can reach "
                f"its port {port}; provision it without network: none to expose ports",
                op="expose",
            )
        return f"http://127.0.0.1:{port}"
