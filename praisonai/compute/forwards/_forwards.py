"""A provider's forwards, one per (instance, port): a second ``expose`` of a port returns the
first's URL, and ``shutdown`` of an instance stops its forwards."""

from __future__ import annotations

import threading

from praisonai.compute.forwards._forward import Dial, Forward


class Forwards:
    """The forwards one provider object started, by instance and port."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_key: dict[tuple[str, int], Forward] = {}

    def open(self, instance_id: str, port: int, dial: Dial) -> str:
        """The URL of the forward to ``port`` of the instance, started on first use."""
        with self._lock:
            found = self._by_key.get((instance_id, port))
            if found is None:
                found = self._by_key[instance_id, port] = Forward(dial, f"{instance_id}-{port}")
            return found.url

    def holds(self, instance_id: str, port: int) -> bool:
        """Whether a forward of this process serves that port (it lives as long as the process)."""
        with self._lock:
            return (instance_id, port) in self._by_key

    def close(self, instance_id: str) -> None:
        """Stop the instance's forwards (nothing listens on their ports afterwards)."""
        with self._lock:
            gone = [key for key in self._by_key if key[0] == instance_id]
            closing = [self._by_key.pop(key) for key in gone]
        for forward in closing:
            forward.close()


class LoopbackForwarder:
    """The base of a forwarder (``compute.abilities.ports.Forwarder``) whose URLs are this
    process's forwards on 127.0.0.1 (``forwards``); a subclass writes ``expose``."""

    def __init__(self) -> None:
        self.forwards = Forwards()

    def stop(self, instance_id: str) -> None:
        """Stop this process's forwards to the instance."""
        self.forwards.close(instance_id)

    def forwarding(self, instance_id: str, port: int) -> bool:
        """Whether a forward of this process serves that port."""
        return self.forwards.holds(instance_id, port)
