"""One ``pods/exec`` WebSocket as a channel transport: stdin in, stdout and stderr apart.

The helper's has no TTY (a TTY merges stderr into stdout, and the helper needs them apart); a
terminal's (``_pty``) has one, and so no stderr channel: the kubelet drops it under a TTY.
Stdin goes as BINARY frames (the client sends ``str`` as TEXT). On ``v5.channel.k8s.io``
``close`` half-closes stdin first (CLOSE channel), so the helper sees EOF and ends; on v4 the
end of the connection does that. An idle stream is pinged so that proxies keep it open.
"""

from __future__ import annotations

import contextlib
import json
import socket
import time
from typing import Any

from kubernetes import client
from kubernetes.stream import stream
from kubernetes.stream.ws_client import (
    ERROR_CHANNEL,
    RESIZE_CHANNEL,
    STDERR_CHANNEL,
    STDIN_CHANNEL,
    STDOUT_CHANNEL,
)
from websocket import ABNF

from praisonai._errors import ExecError
from praisonai._limits import ERROR_DETAIL_CHARS
from praisonai.runtime.transport import Receiver, Transport

PING_EVERY_S = 20.0


def open_exec(core: Any, namespace: str, pod: str, argv: list[str], *, tty: bool = False) -> Any:
    """The exec stream's client (``WSClient``), connected; raises ``ApiException`` when refused.
    With ``tty`` the process gets a pseudo-terminal (its size: resize messages on channel 4)."""
    ws = stream(
        own_client(core).connect_get_namespaced_pod_exec,
        pod,
        namespace,
        command=argv,
        container="sandbox",
        stdin=True,
        stdout=True,
        stderr=not tty,
        tty=tty,
        _preload_content=False,
        binary=True,
    )
    keep_no_copy(ws)
    return ws


def own_client(core: Any) -> Any:
    """A ``CoreV1Api`` of its own for one WebSocket call. The SDK's ``stream()`` swaps its
    client's ``call_api`` while it connects: another thread's call on a shared client would go
    through the WebSocket transport meanwhile (and get a pod's JSON as a failed handshake)."""
    return client.CoreV1Api(client.ApiClient(core.api_client.configuration))


class _Discard:
    def write(self, data: bytes) -> None:
        pass

    def getvalue(self) -> bytes:
        return b""


def keep_no_copy(ws: Any) -> None:
    """Stop the client from keeping a copy of every output byte, for ``read_all``.

    The ONE private name used: ``stream()`` always asks for that copy (``capture_all``) and has
    no way to decline it, so a helper that lives for hours would grow it without end. The public
    ``read_all()`` empties it but also drops output not yet read from a channel (lost replies).
    """
    ws._all = _Discard()


class PodExecTransport(Transport):
    """A process started by the API server's exec endpoint, attached over one WebSocket."""

    def __init__(self, ws: Any) -> None:
        self._ws = ws
        self._code: int | None = None
        self._closed = False

    def _pump(self, on_stdout: Receiver, on_stderr: Receiver) -> None:
        ws = self._ws
        pinged = time.monotonic()
        try:
            while ws.is_open():
                ws.update(timeout=PING_EVERY_S)
                out = ws.read_channel(STDOUT_CHANNEL, timeout=0)
                err = ws.read_channel(STDERR_CHANNEL, timeout=0)
                if out:
                    on_stdout(out)
                if err:
                    on_stderr(err)
                self._take_status()
                if time.monotonic() - pinged >= PING_EVERY_S and ws.is_open():
                    ws.sock.ping()  # an idle stream must not look dead to a proxy in between
                    pinged = time.monotonic()
        except Exception:  # the stream's end, however the client reports it (closed socket, EOF)
            pass
        finally:
            with contextlib.suppress(Exception):  # a read may touch the socket, closed or not
                self._take_status()
            with contextlib.suppress(Exception):
                ws.sock.shutdown()  # frees the socket; only here, where nothing polls it any more

    def _take_status(self) -> None:
        """The error channel's Status: the exit code (0 on ``Success``)."""
        code = exit_code(self._ws.read_channel(ERROR_CHANNEL, timeout=0))
        if code is not None:
            self._code = code

    def send(self, data: bytes) -> None:
        try:
            self._ws.write_channel(STDIN_CHANNEL, bytes(data))
        except Exception as exc:  # the client raises its own WebSocket errors, not OSError
            raise OSError(f"the exec stream is closed: {exc}") from exc

    def resize(self, cols: int, rows: int) -> None:
        """Set the TTY's size (a stream opened with ``tty``); raises ``OSError`` once it is closed."""
        size = json.dumps({"Width": cols, "Height": rows}).encode()
        try:
            self._ws.write_channel(RESIZE_CHANNEL, size)
        except Exception as exc:  # the client raises its own WebSocket errors, not OSError
            raise OSError(f"the exec stream is closed: {exc}") from exc

    def alive(self) -> bool:
        return self._code is None and bool(self._ws.is_open())

    def exit_code(self) -> int | None:
        return self._code

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(Exception):
            self._ws.close_channel(STDIN_CHANNEL)  # v5 only (a no-op on v4): EOF for the helper
        with contextlib.suppress(Exception):
            # shutdown wakes the reader's poll (a close from this thread would not); no close
            # handshake, which would race the reader for the socket
            self._ws.sock.sock.shutdown(socket.SHUT_RDWR)


def exit_code(status: bytes | str) -> int | None:
    """The exit code the error channel's Status says (0 on ``Success``); ``None`` when it said
    nothing (the stream ended first) or nothing readable."""
    if not status:
        return None
    with contextlib.suppress(ValueError, TypeError, KeyError, IndexError):
        said = json.loads(status)
        if said.get("status") == "Success":
            return 0
        causes = (said.get("details") or {}).get("causes") or []
        codes = [c["message"] for c in causes if c.get("reason") == "ExitCode"]
        return int(codes[0]) if codes else 255
    return None


_SEND_CHUNK = 1 << 20


def run_exec(core: Any, ns: str, pod: str, argv: list[str], stdin: bytes, op: str, timeout_s: float) -> bytes:
    """``argv``'s stdout, run in ``pod`` with ``stdin`` (blocking), read as binary frames with no
    helper in between (a large archive in seconds); ``ExecError`` when it fails or outlasts
    ``timeout_s``. No EOF is sent (a v4 stream cannot): ``argv`` reads exactly what it needs.

    Frames are read off the WebSocket here, not through the client's ``update``: that one joins
    each frame to the bytes before it (quadratic on a large output), and misses frames that
    websocket-client already holds in its own buffer until the next ones arrive."""
    ws = open_exec(core, ns, pod, argv)
    out, err, status = bytearray(), bytearray(), b""
    try:
        for at in range(0, len(stdin), _SEND_CHUNK):
            ws.write_channel(STDIN_CHANNEL, stdin[at : at + _SEND_CHUNK])
        ws.sock.settimeout(timeout_s)
        while not status:  # the Status comes once all output was sent
            code, frame = ws.sock.recv_data_frame(True)
            if code == ABNF.OPCODE_CLOSE:
                break
            channel, data = (frame.data[0], frame.data[1:]) if frame.data else (None, b"")
            if channel == STDOUT_CHANNEL:
                out += data
            elif channel == STDERR_CHANNEL:
                err += data
            elif channel == ERROR_CHANNEL:
                status = bytes(data)
    except Exception as exc:  # the client raises its own WebSocket errors (a timeout too), not OSError
        raise ExecError(f"{op}: the exec stream of pod {pod} broke: {exc}", op=op) from exc
    finally:
        with contextlib.suppress(Exception):
            ws.close()
    if exit_code(status) != 0:
        said = err.decode(errors="replace").strip()[-ERROR_DETAIL_CHARS:] or "no message"
        raise ExecError(f"{op} failed in pod {pod}: {said}", op=op)
    return bytes(out)
