"""Ports on kubernetes: the API server's ``pods/{name}/portforward``, as ``kubectl port-forward``.

Each connection to the local forward (``compute.forwards``) opens one port-forward WebSocket to the
pod, which reaches the port in the pod's network namespace (a server bound to 127.0.0.1 there
too) with nothing run in the pod. The protocol (``v4.channel.k8s.io``): channel 0 carries the
port's bytes both ways, channel 1 the kubelet's error for it (nothing listening, say); each
channel's first frame is the port number, two bytes, little-endian. An error ends the local
connection and is logged (``praisonai.kubernetes``).

The SDK's own ``portforward()`` bridges through a thread that ``select()``s, which fails on a
descriptor past 1023; this rides the SDK's ``stream()`` client instead (the one ``_transport``
uses, which polls). Where the API server refuses port-forwarding (RBAC without
``pods/portforward``), each connection falls back to the relay exec'd in the pod
(``compute.forwards``), as before.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from kubernetes.client import ApiException
from kubernetes.stream import stream

from praisonai import _telemetry
from praisonai.compute.forwards import LoopbackForwarder, Pipe, StartProcess, relay
from praisonai.compute.providers.kubernetes._pod import pod_name
from praisonai.compute.providers.kubernetes._transport import keep_no_copy, own_client

DATA, ERROR = 0, 1
_PREFIX = 2  # the port number at the head of each channel's first frame
_POLL_S = 1.0  # how long one wait for the socket lasts before the pipe looks whether it closed
log = _telemetry.logger("kubernetes")


class PortForwardPipe:
    """One port-forward WebSocket to ``port`` of the pod, as a ``compute.forwards`` Pipe."""

    def __init__(self, ws: Any, port: int) -> None:
        self._ws = ws
        self._port = port
        self._skip = {DATA: _PREFIX, ERROR: _PREFIX}  # each channel's port prefix, not yet read
        self._send_lock = threading.Lock()

    def send(self, data: bytes) -> None:
        with self._send_lock:
            try:
                self._ws.write_channel(DATA, data)
            except Exception as exc:  # the client raises its own WebSocket errors
                raise OSError(f"the port-forward to port {self._port} closed: {exc}") from exc

    def recv(self) -> bytes:
        """The port's next bytes; ``b""`` when it closed or the kubelet reported an error."""
        while self._ws.is_open():
            try:
                self._ws.update(timeout=_POLL_S)
            except Exception:  # closed meanwhile (by ``close``, on another thread), or broken
                return b""
            if error := self._take(ERROR):
                log.warning("port-forward to port %s: %s", self._port, error.decode(errors="replace"))
                return b""
            if data := self._take(DATA):
                return data
        return self._take(DATA)

    def _take(self, channel: int) -> bytes:
        data = bytes(self._ws.read_channel(channel))
        cut = min(self._skip[channel], len(data))
        self._skip[channel] -= cut
        return data[cut:]

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._ws.close()


class PortForwarder(LoopbackForwarder):
    """``KubernetesCompute``'s forwarder (``compute.abilities.ports``), built from its ``status``
    (an unknown instance raises ``InstanceNotFoundError`` at ``expose``, not per connection), its
    ``pod_of`` (the instance's pod name, blocking), its ``cluster`` (the ``CoreV1Api`` and the
    namespace) and its ``start`` (the exec relay's stream, where port-forwarding is refused)."""

    def __init__(
        self,
        status: Callable[[str], Awaitable[object]],
        pod_of: Callable[[str, str], str | None],
        cluster: Callable[[], tuple[Any, str]],
        start: StartProcess,
    ) -> None:
        super().__init__()
        self.status = status
        self.pod_of = pod_of
        self.cluster = cluster
        self.start = start

    async def expose(self, instance_id: str, port: int) -> str:
        """The URL of this process's forward to ``port`` of the instance."""
        await self.status(instance_id)

        def dial() -> Pipe:
            name = self.pod_of(instance_id, "expose") or pod_name(instance_id)
            core, namespace = self.cluster()
            return connect(core, namespace, name, port, lambda: relay(self.start, instance_id, port))

        return self.forwards.open(instance_id, port, dial)


def connect(core: Any, namespace: str, name: str, port: int, fallback: Callable[[], Pipe]) -> Pipe:
    """A pipe to ``port`` of pod ``name``: a port-forward, or ``fallback()`` where the API server
    refuses one."""
    try:
        ws = stream(
            own_client(core).connect_get_namespaced_pod_portforward,
            name,
            namespace,
            ports=str(port),
            _preload_content=False,
            binary=True,
        )
    except ApiException as exc:  # refused (403 without pods/portforward, a server without it)
        log.info("port-forward to pod %s refused (%s); relaying through exec instead", name, exc.reason)
        return fallback()
    keep_no_copy(ws)
    return PortForwardPipe(ws, port)
