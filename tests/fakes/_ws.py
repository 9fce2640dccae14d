"""A server-side WebSocket (RFC 6455) on a hijacked ``http.server`` connection: just what the
exec endpoints of the Kubernetes and Daytona fakes need (handshake with a chosen subprotocol,
data/close/ping frames, no extensions)."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import socket
import struct
import threading
from http.server import BaseHTTPRequestHandler

_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
TEXT, BINARY, CLOSE, PING, PONG = 1, 2, 8, 9, 10


def offered(h: BaseHTTPRequestHandler) -> list[str]:
    """The subprotocols the client offers, in its order."""
    header = h.headers.get("Sec-WebSocket-Protocol") or ""
    return [p.strip() for p in header.split(",") if p.strip()]


class WebSocket:
    """One accepted WebSocket; ``send`` may be called from any thread, ``recv`` from one."""

    def __init__(self, h: BaseHTTPRequestHandler, protocol: str) -> None:
        key = h.headers.get("Sec-WebSocket-Key") or ""
        accept = base64.b64encode(hashlib.sha1((key + _GUID).encode()).digest()).decode()
        h.send_response(101, "Switching Protocols")
        h.send_header("Upgrade", "websocket")
        h.send_header("Connection", "Upgrade")
        h.send_header("Sec-WebSocket-Accept", accept)
        h.send_header("Sec-WebSocket-Protocol", protocol)
        h.end_headers()
        h.wfile.flush()
        h.close_connection = True
        self.protocol = protocol
        self._h = h
        self._lock = threading.Lock()
        self.closed = False

    def send(self, payload: bytes, opcode: int = BINARY) -> None:
        """One unmasked final frame; a peer that is gone is ignored (the reader sees it)."""
        size = len(payload)
        if size < 126:
            head = struct.pack("!BB", 0x80 | opcode, size)
        elif size < 1 << 16:
            head = struct.pack("!BBH", 0x80 | opcode, 126, size)
        else:
            head = struct.pack("!BBQ", 0x80 | opcode, 127, size)
        with self._lock:
            if self.closed:
                return
            try:
                self._h.wfile.write(head + payload)
                self._h.wfile.flush()
            except (OSError, ValueError):  # ValueError: the server closed the file already
                self.closed = True

    def close(self, code: int = 1000, reason: str = "") -> None:
        """Send a close frame (``reason``: at most 123 bytes of UTF-8, as RFC 6455 allows)."""
        self.send(struct.pack("!H", code) + reason.encode()[:123], CLOSE)
        with self._lock:
            self.closed = True

    def abort(self) -> None:
        """Cut the connection (the reader then sees its end)."""
        with contextlib.suppress(OSError):
            self._h.connection.shutdown(socket.SHUT_RDWR)

    def recv(self) -> tuple[int, bytes] | None:
        """The next data message (opcode, payload), answering pings; ``None`` once closed."""
        message = b""
        first = 0
        while True:
            frame = self._frame()
            if frame is None:
                return None
            fin, opcode, payload = frame
            if opcode == PING:
                self.send(payload, PONG)
                continue
            if opcode == PONG:
                continue
            if opcode == CLOSE:
                self.close()
                return None
            first = first or opcode
            message += payload
            if fin:
                return first, message

    def _frame(self) -> tuple[bool, int, bytes] | None:
        read = self._h.rfile.read
        try:
            head = read(2)
            if len(head) < 2:
                return None
            size = head[1] & 0x7F
            if size == 126:
                size = struct.unpack("!H", read(2))[0]
            elif size == 127:
                size = struct.unpack("!Q", read(8))[0]
            mask = read(4) if head[1] & 0x80 else b""
            data = read(size)
        except (OSError, ValueError, struct.error):
            return None
        if len(data) < size:
            return None
        if mask:
            key = (mask * (size // 4 + 1))[:size]  # one big-integer XOR: a loop per byte is slow
            data = (int.from_bytes(data, "big") ^ int.from_bytes(key, "big")).to_bytes(size, "big")
        return bool(head[0] & 0x80), head[0] & 0x0F, data
