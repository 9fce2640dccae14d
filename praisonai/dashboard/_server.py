"""The dashboard's server: its socket, its token and its uvicorn, in the foreground or a thread."""

from __future__ import annotations

import secrets
import socket
import threading
import time
from types import TracebackType

import uvicorn

from praisonai._errors import ConfigError
from praisonai.dashboard._app import create_app
from praisonai.dashboard._guard import Access
from praisonai.dashboard._http import ClientLimits, bounded_protocol

#: The names the dashboard listens on without ``expose``.
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
#: How long a stopping server lets open streams (events, terminals) end before closing them.
GRACE_S = 1
#: How long :meth:`Dashboard.start` waits for uvicorn to answer.
START_S = 30.0


class Dashboard:
    """A dashboard bound to ``host:port`` (port 0: a free one) with a new token.

    The socket is bound here, so :attr:`url` is known (and the port taken) before it serves.
    ``expose`` must be given for a host beyond loopback: the dashboard opens shells in instances.
    ``limits``: how long a client may take to send a request, and how many connections are held
    (default: :class:`ClientLimits`'s).

    Raises:
        ConfigError: a non-loopback host without ``expose``, or a port that cannot be bound.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        expose: bool = False,
        limits: ClientLimits | None = None,
    ) -> None:
        if host not in LOOPBACK and not expose:
            raise ConfigError(
                f"--host {host}: the dashboard listens on loopback only unless --expose is given "
                "(whoever reaches it with the token gets a shell in your instances)"
            )
        self._socket = _bind(host, port)
        self.port: int = self._socket.getsockname()[1]
        token = secrets.token_urlsafe(32)
        self.access = (
            Access.loopback(token, self.port) if host in LOOPBACK else Access(token, self.port, None)
        )
        shown = {"::1": "[::1]", "localhost": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "[::1]"}.get(
            host, host
        )
        self.url = f"http://{shown}:{self.port}/?token={token}"
        config = uvicorn.Config(
            create_app(self.access),
            log_level="warning",
            timeout_graceful_shutdown=GRACE_S,
            http=bounded_protocol(limits or ClientLimits()),
            ws="websockets-sansio",
        )
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    def run(self) -> None:
        """Serve until interrupted (Ctrl-C)."""
        with self._socket:
            self._server.run(sockets=[self._socket])

    def start(self) -> Dashboard:
        """Serve in a thread; returns once it answers."""
        self._thread = threading.Thread(target=self.run, name="praisonai-dashboard", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + START_S
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise ConfigError(f"the dashboard on port {self.port} did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        """End a :meth:`start`-ed server and wait for its thread (idempotent)."""
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self._socket.close()

    def __enter__(self) -> Dashboard:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family)
    except OSError as exc:
        raise ConfigError(
            f"--host {host} --port {port}: cannot listen there ({exc.strerror or exc})"
        ) from exc
