"""One HTTP server on 127.0.0.1 and the background loops of a vendor's fake, started and
stopped together: the lifecycle (and the request handler's shell) the Daytona, Fly.io and
Kubernetes fakes share."""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

#: ``dispatch(handler, path_parts, query)``: answers one request (``query``: each name's values).
Dispatch = Callable[[BaseHTTPRequestHandler, list[str], dict[str, list[str]]], None]
ALL_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hung up (an SDK dropping a probe or a pooled socket) is not news


def _handler(dispatch: Dispatch, methods: tuple[str, ...]) -> type[BaseHTTPRequestHandler]:
    """HTTP/1.1, quiet, each of ``methods`` given to ``dispatch`` with the path split on ``/``
    (unquoted) and the query parsed; any other method is the standard library's 501."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _any(self) -> None:
            parts = urlsplit(self.path)
            dispatch(self, [unquote(p) for p in parts.path.split("/") if p], parse_qs(parts.query))

    for method in methods:
        setattr(Handler, f"do_{method}", Handler._any)
    return Handler


class Loopback:
    """Serves ``dispatch`` on a free port for ``methods``; each of ``loops`` runs on its own
    thread from :meth:`start` until ``closed`` is set by :meth:`stop`. ``backlog``: the listen
    queue (an SDK that opens one connection per operation needs a deep one)."""

    def __init__(
        self,
        dispatch: Dispatch,
        loops: tuple[Callable[[], None], ...] = (),
        *,
        methods: tuple[str, ...] = ALL_METHODS,
        backlog: int = 256,
    ) -> None:
        server_class = type("Server", (_Server,), {"request_queue_size": backlog})
        self._server = server_class(("127.0.0.1", 0), _handler(dispatch, methods))
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
