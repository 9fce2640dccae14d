"""A forward: a TCP listener on this host's loopback: each connection accepted is relayed, both ways, to a
stream a provider dials into the instance (an exec'd relay, an SSH ``direct-tcpip`` channel).

Threads, not the event loop: a transport's reader is a thread already (``runtime.transport``), and
the forward must outlive the event loop that asked for it (an ``anyio.run`` per call). It listens
on 127.0.0.1 only, never on every address; ``close`` stops the listener and every relay at once.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable
from typing import Protocol

from praisonai._limits import PORT_RELAY_CHUNK


class Pipe(Protocol):
    """One duplex byte stream into the instance, to its port."""

    def send(self, data: bytes) -> None:
        """Write all of ``data``; raises ``OSError`` when the stream is gone."""

    def recv(self) -> bytes:
        """The next bytes from the port; ``b""`` once it closed."""

    def close(self) -> None:
        """End the stream both ways (idempotent)."""


Dial = Callable[[], Pipe]


class SocketPipe:
    """A connected TCP socket as a ``Pipe`` (a port this host can reach directly)."""

    def __init__(self, sock: socket.socket) -> None:
        sock.settimeout(None)  # the connect's timeout must not apply to an idle connection
        self._sock = sock

    def send(self, data: bytes) -> None:
        self._sock.sendall(data)

    def recv(self) -> bytes:
        try:
            return self._sock.recv(PORT_RELAY_CHUNK)
        except OSError:
            return b""

    def close(self) -> None:
        _hang_up(self._sock)


class Forward:
    """One forward: listens on ``127.0.0.1:<ephemeral>`` (``url``) and relays each connection
    through ``dial()``."""

    def __init__(self, dial: Dial, name: str) -> None:
        self._dial = dial
        self._listener = socket.create_server(("127.0.0.1", 0))  # loopback only, by design
        self.port: int = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._closed = False
        threading.Thread(target=self._serve, name=f"praisonai-port-{name}", daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:  # close() shut the listener down
                return
            with self._lock:
                if self._closed:
                    conn.close()
                    return
                self._open.add(conn)
            threading.Thread(target=self._relay, args=(conn,), daemon=True).start()

    def _relay(self, conn: socket.socket) -> None:
        """One connection: the port's bytes to the client here, the client's up in another thread.
        Either side ending ends both (an HTTP client does not half-close)."""
        try:
            pipe = self._dial()
        except Exception:  # the instance or its port is not there: the client sees a closed connection
            self._drop(conn)
            return
        threading.Thread(target=_pump_up, args=(conn, pipe), daemon=True).start()
        try:
            while data := pipe.recv():
                conn.sendall(data)
        except OSError:
            pass
        finally:
            pipe.close()
            self._drop(conn)

    def _drop(self, conn: socket.socket) -> None:
        with self._lock:
            self._open.discard(conn)
        _hang_up(conn)

    def close(self) -> None:
        """Stop listening and end every relayed connection; idempotent."""
        with self._lock:
            self._closed = True
            conns, self._open = self._open, set()
        _hang_up(self._listener)  # shutdown wakes the accept() blocked in _serve
        for conn in conns:
            _hang_up(conn)


def _pump_up(conn: socket.socket, pipe: Pipe) -> None:
    try:
        while data := conn.recv(PORT_RELAY_CHUNK):
            pipe.send(data)
    except OSError:
        pass
    finally:
        pipe.close()
        _hang_up(conn)


def _hang_up(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()
