"""One HTTP server on 127.0.0.1 and the background loops of a vendor's fake, started and
stopped together: the lifecycle the Daytona, Fly.io and Kubernetes fakes share."""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hung up (an SDK dropping a probe or a pooled socket) is not news


class Loopback:
    """Serves ``handler`` on a free port; each of ``loops`` runs on its own thread from
    :meth:`start` until ``closed`` is set by :meth:`stop`. ``backlog``: the listen queue (an
    SDK that opens one connection per operation needs a deep one)."""

    def __init__(
        self,
        handler: type[BaseHTTPRequestHandler],
        loops: tuple[Callable[[], None], ...] = (),
        *,
        backlog: int = 256,
    ) -> None:
        server_class = type("Server", (_Server,), {"request_queue_size": backlog})
        self._server = server_class(("127.0.0.1", 0), handler)
        self.closed = threading.Event()
        self._threads = [
            threading.Thread(target=f, daemon=True) for f in (self._server.serve_forever, *loops)
        ]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        """Stop the loops and the server, and close its socket."""
        self.closed.set()
        self._server.shutdown()
        self._server.server_close()
