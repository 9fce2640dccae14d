"""``pods/{name}/exec`` over WebSocket: the kubelet's streaming protocol on a ``docker exec``.

Channels (first byte of every data message): 0 stdin (client -> server), 1 stdout, 2 stderr,
3 error (one ``metav1.Status`` JSON when the process ends: ``Success``, or ``Failure`` with reason
``NonZeroExitCode`` and the exit code as ``details.causes[reason=ExitCode].message``), 4 resize
(accepted and ignored: no TTY here; ``tty=true`` is served by ``_tty``). ``v5.channel.k8s.io``
adds 255 CLOSE: ``[255, 0]`` from the client ends the process's stdin. The client's TEXT and
BINARY messages are both accepted (the Python client sends ``str`` stdin as TEXT).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import threading
from typing import Any

from fakes._ws import WebSocket
from fakes.kubernetes import _pods

STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255


def status_for(code: int, argv: list[str]) -> dict[str, Any]:
    """The error channel's message for an exit status, as the kubelet writes it."""
    if code == 0:
        return {"metadata": {}, "status": "Success"}
    return {
        "metadata": {},
        "status": "Failure",
        "message": f"command terminated with non-zero exit code: error executing command {argv}, "
        f"exit code {code}",
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]},
    }


def serve(ws: WebSocket, container: str, argv: list[str], stdin: bool, log: list[str]) -> None:
    """Run ``argv`` in ``container`` and bridge it to ``ws`` until it ends or the client goes."""
    process = _pods.exec_process(container, argv, stdin)
    pumps = [
        threading.Thread(target=_pump, args=(stream, ws, channel), daemon=True)
        for stream, channel in ((process.stdout, STDOUT), (process.stderr, STDERR))
    ]
    for pump in pumps:
        pump.start()
    threading.Thread(target=_finish, args=(ws, process, pumps, argv), daemon=True).start()
    while (message := ws.recv()) is not None:
        _, data = message
        if not data:
            continue
        channel, payload = data[0], data[1:]
        log.append(f"ch{channel}")
        if channel == STDIN and process.stdin is not None:
            write_all(process.stdin, payload)
        elif channel == CLOSE and payload[:1] == bytes([STDIN]) and ws.protocol.startswith("v5"):
            _close_stdin(process)
    # the client hung up: its process loses its stdin and its docker client, as under a kubelet
    _close_stdin(process)
    with contextlib.suppress(OSError):
        process.terminate()


def write_all(stdin: Any, data: bytes) -> None:
    """All of ``data``: a raw pipe's write may take only part of it (when the pipe is full)."""
    view = memoryview(data)
    with contextlib.suppress(OSError, ValueError):  # the process is gone: its input goes nowhere
        while view:
            view = view[stdin.write(view) or 0 :]


def _pump(stream: Any, ws: WebSocket, channel: int) -> None:
    while data := stream.read(1 << 16):
        ws.send(bytes([channel]) + data)


def _finish(
    ws: WebSocket, process: subprocess.Popen[bytes], pumps: list[threading.Thread], argv: list[str]
) -> None:
    for pump in pumps:
        pump.join()
    code = process.wait()
    for stream in (process.stdout, process.stderr, process.stdin):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
    ws.send(bytes([ERROR]) + json.dumps(status_for(code, argv)).encode())
    ws.close()
    threading.Timer(5.0, ws.abort).start()  # a client that never answers the close is cut off


def _close_stdin(process: subprocess.Popen[bytes]) -> None:
    if process.stdin is not None:
        with contextlib.suppress(OSError):
            process.stdin.close()
