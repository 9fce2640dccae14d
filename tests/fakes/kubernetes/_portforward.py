"""``pods/{name}/portforward`` over WebSocket, as the kubelet serves it (``v4.channel.k8s.io``).

One port per connection here (``?ports=N``; the client may ask for several, the fake refuses
that). Channels: 0 the port's bytes both ways, 1 the kubelet's error for it; the server opens each
with a frame holding the port number (two bytes, little-endian). The port is reached inside the
pod's network namespace (a ``docker exec`` of a small relay in its container, as the kubelet's
``socat``/``nsenter`` does), so a server bound to 127.0.0.1 in the pod answers too. When nothing
listens, channel 1 says so (``error forwarding port N to pod …: … Connection refused``) and the
connection ends.
"""

from __future__ import annotations

import contextlib
import subprocess
import threading
from typing import Any

from fakes._ws import WebSocket
from fakes.kubernetes import _exec, _pods

DATA, ERROR = 0, 1
#: What the kubelet offers for a WebSocket port-forward (no v5: that is exec's).
PROTOCOLS = ("v4.channel.k8s.io", "portforward.k8s.io")
_RELAY = """\
import os, socket, sys, threading
try:
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
except OSError as exc:
    sys.stderr.write(f"connect(127.0.0.1:{sys.argv[1]}): {exc.strerror}")
    sys.exit(1)
def up():
    while data := os.read(0, 65536):
        s.sendall(data)
    s.shutdown(socket.SHUT_WR)
threading.Thread(target=up, daemon=True).start()
while data := s.recv(65536):
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()
"""


def serve(ws: WebSocket, container: str, pod_uid: str, port: int, log: list[str]) -> None:
    """Bridge ``ws`` to ``port`` in ``container`` until either side ends."""
    prefix = port.to_bytes(2, "little")
    ws.send(bytes([DATA]) + prefix)
    ws.send(bytes([ERROR]) + prefix)
    relay = _pods.exec_process(container, ["python3", "-I", "-S", "-c", _RELAY, str(port)], stdin=True)
    threading.Thread(target=_downstream, args=(ws, relay, pod_uid, port), daemon=True).start()
    while (message := ws.recv()) is not None:
        _, data = message
        if data[:1] == bytes([DATA]) and relay.stdin is not None:
            log.append(f"portforward {port}")
            _exec.write_all(relay.stdin, data[1:])
    with contextlib.suppress(OSError):  # the client hung up: the relay ends with its stdin
        if relay.stdin is not None:
            relay.stdin.close()
        relay.terminate()


def _downstream(ws: WebSocket, relay: subprocess.Popen[bytes], pod_uid: str, port: int) -> None:
    assert relay.stdout is not None and relay.stderr is not None
    while data := relay.stdout.read(1 << 16):
        ws.send(bytes([DATA]) + data)
    code = relay.wait()
    if code != 0:
        said = relay.stderr.read().decode(errors="replace").strip()
        said = f"error forwarding port {port} to pod {pod_uid}, uid : exit status {code}: {said}"
        ws.send(bytes([ERROR]) + said.encode())
    ws.close()
    threading.Timer(5.0, ws.abort).start()


def refused_reason(query: dict[str, Any]) -> str | None:
    """Why a request for these ``ports`` is refused (none, several, not a port), or ``None``."""
    ports = query.get("ports", [])
    if len(ports) != 1 or "," in ports[0]:
        return "the fake forwards one port per connection: give ports=N once"
    if not ports[0].isdigit() or not 0 < int(ports[0]) < 65536:
        return f"invalid port {ports[0]!r}"
    return None
