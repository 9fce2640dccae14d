"""``pods/{name}/exec`` with ``tty=true``: the kubelet's streaming protocol on a ``docker exec``
that has a real pseudo-terminal, driven through the docker API (docker-py) — the docker CLI can
neither attach a TTY without one of its own nor resize an exec.

Channels: 0 stdin (typed into the TTY), 1 the TTY's output (no stderr channel: under a TTY the
kubelet drops it, stderr is on the terminal), 3 the exit Status when the process ends (as
``_exec``), 4 resize (``{"Width": w, "Height": h}``, applied with ``exec_resize``: the program gets
SIGWINCH). ``v5.channel.k8s.io``'s CLOSE of stdin half-closes the TTY's input.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from typing import Any

import docker as docker_sdk

from fakes._ws import WebSocket
from fakes.kubernetes._exec import CLOSE, ERROR, RESIZE, STDIN, STDOUT, status_for

_EXIT_WAIT_S = 10.0  # how long the end of the output may precede the engine's exit code


def serve_tty(ws: WebSocket, container: str, argv: list[str], log: list[str]) -> None:
    """Run ``argv`` in ``container`` on a TTY and bridge it to ``ws`` until the client goes."""
    engine = docker_sdk.from_env()
    api: Any = engine.api
    try:
        exec_id = api.exec_create(container, argv, stdin=True, tty=True)["Id"]
        stream = api.exec_start(exec_id, socket=True, tty=True)
    except docker_sdk.errors.APIError as exc:  # as a kubelet reports a failed start: on channel 3
        ws.send(bytes([ERROR]) + json.dumps(status_for(126, argv) | {"message": str(exc)}).encode())
        ws.close()
        engine.close()
        return
    sock: socket.socket = getattr(stream, "_sock", stream)
    threading.Thread(target=_relay, args=(ws, sock, api, exec_id, argv), daemon=True).start()
    try:
        _take_input(ws, sock, api, exec_id, log)
    finally:
        # the client hung up: the TTY loses its connection, as under a kubelet. The socket's
        # file wrapper holds its descriptor too: both are closed, or it stays open
        for held in (stream, sock):
            with contextlib.suppress(OSError):
                held.close()
        engine.close()


def _take_input(ws: WebSocket, sock: socket.socket, api: Any, exec_id: str, log: list[str]) -> None:
    """The client's messages: stdin into the TTY, resizes onto it, v5's CLOSE of stdin."""
    while (message := ws.recv()) is not None:
        _, data = message
        if not data:
            continue
        channel, payload = data[0], data[1:]
        log.append(f"ch{channel}")
        if channel == STDIN:
            with contextlib.suppress(OSError):  # the program is gone: its input goes nowhere
                sock.sendall(payload)
        elif channel == RESIZE:
            _resize(api, exec_id, payload)
        elif channel == CLOSE and payload[:1] == bytes([STDIN]) and ws.protocol.startswith("v5"):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_WR)


def _resize(api: Any, exec_id: str, payload: bytes) -> None:
    """Apply a resize message; a malformed one is ignored, as the kubelet logs and drops it."""
    with contextlib.suppress(ValueError, TypeError, KeyError, docker_sdk.errors.APIError):
        size = json.loads(payload)
        api.exec_resize(exec_id, height=int(size["Height"]), width=int(size["Width"]))


def _relay(ws: WebSocket, sock: socket.socket, api: Any, exec_id: str, argv: list[str]) -> None:
    """The TTY's output onto channel 1 until it ends, then the exit Status and the close."""
    with contextlib.suppress(OSError):
        while data := sock.recv(1 << 16):
            ws.send(bytes([STDOUT]) + data)
    code = _exit_code(api, exec_id)
    ws.send(bytes([ERROR]) + json.dumps(status_for(code, argv)).encode())
    ws.close()
    threading.Timer(5.0, ws.abort).start()  # a client that never answers the close is cut off


def _exit_code(api: Any, exec_id: str) -> int:
    """The exec's exit code once the engine has it (its output may end a moment before)."""
    deadline = time.monotonic() + _EXIT_WAIT_S
    while True:
        try:
            state = api.exec_inspect(exec_id)
        except docker_sdk.errors.APIError:  # the container went with it
            return 137
        if not state.get("Running") or time.monotonic() > deadline:
            code = state.get("ExitCode")
            return 137 if code is None else int(code)
        time.sleep(0.05)
