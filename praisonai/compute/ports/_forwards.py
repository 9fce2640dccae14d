"""A provider's forwarders, one per (instance, port): a second ``expose`` of a port returns the
first's URL, and ``shutdown`` of an instance stops its forwarders."""

from __future__ import annotations

import threading

from praisonai.compute.ports._forwarder import Dial, Forwarder


class Forwards:
    """The forwarders one provider object started, by instance and port."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_key: dict[tuple[str, int], Forwarder] = {}

    def open(self, instance_id: str, port: int, dial: Dial) -> str:
        """The URL of the forwarder to ``port`` of the instance, started on first use."""
        with self._lock:
            found = self._by_key.get((instance_id, port))
            if found is None:
                found = self._by_key[instance_id, port] = Forwarder(dial, f"{instance_id}-{port}")
            return found.url

    def holds(self, instance_id: str, port: int) -> bool:
        """Whether a forwarder of this process serves that port (it lives as long as the process)."""
        with self._lock:
            return (instance_id, port) in self._by_key

    def close(self, instance_id: str) -> None:
        """Stop the instance's forwarders (nothing listens on their ports afterwards)."""
        with self._lock:
            gone = [key for key in self._by_key if key[0] == instance_id]
            closing = [self._by_key.pop(key) for key in gone]
        for forwarder in closing:
            forwarder.close()
