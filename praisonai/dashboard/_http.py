"""uvicorn's HTTP/1.1 protocol with bounds on slow clients: how long one may take to send a
request, and how many connections are held at once.

uvicorn bounds only the idle time between requests (``timeout_keep_alive``): that timer starts
after a response and any byte received stops it, so a client that sends half a request line and
waits holds its socket for as long as it likes (slowloris), and an ASGI middleware cannot help
since it runs once the head is whole. uvicorn has no setting for it (Kludex/uvicorn#1192 is the
open report); its ``limit_concurrency`` answers 503 to requests beyond the limit but still holds
their sockets. So this subclass of its h11 protocol adds, as Go's ``http.Server`` has them:

- a **head deadline** (Go's ``ReadHeaderTimeout``): a request's line and headers must arrive
  whole within :attr:`ClientLimits.head_s` of the connection's opening or of the previous
  response's end (a body left unread by that response must be done by then too);
- a **body pause** (nginx's ``client_body_timeout``): while a route reads a body, the client may
  go silent for at most :attr:`ClientLimits.body_pause_s` at a time, so a slow upload over a slow
  link is fine and a stalled one is not;
- a **connection cap**: beyond :attr:`ClientLimits.connections` open connections (websockets
  included), a new one is closed at once.

A client past a bound is disconnected without an answer (it has not finished asking). Once a
request is in, the time the route takes is the route's: a terminal or an event stream is never
cut by these bounds.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import ClassVar

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

#: Seconds a client has to send a request's head (see :class:`ClientLimits`).
HEAD_S = 10.0
#: Seconds a client sending a body may go silent (see :class:`ClientLimits`).
BODY_PAUSE_S = 30.0
#: Connections held at once; a browser opens at most 6 per server, plus a websocket per terminal.
CONNECTIONS = 100


@dataclass(frozen=True, slots=True)
class ClientLimits:
    """How long a client may take to send a request, and how many connections are held."""

    head_s: float = HEAD_S
    body_pause_s: float = BODY_PAUSE_S
    connections: int = CONNECTIONS


def bounded_protocol(limits: ClientLimits) -> type[H11Protocol]:
    """uvicorn's h11 protocol class (its ``http=`` setting) applying ``limits``."""

    class Bounded(BoundedH11Protocol):
        pass

    Bounded.limits = limits
    return Bounded


class BoundedH11Protocol(H11Protocol):
    """:class:`H11Protocol` with the bounds of :attr:`limits` (one timer per connection)."""

    limits: ClassVar[ClientLimits] = ClientLimits()
    _deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.limits.connections:
            transport.close()  # connection_lost forgets it
            return
        self._arm(self.limits.head_s)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if not self._awaiting_head():  # else the head's deadline stands, however many bytes come
            self._in_request()

    def on_response_complete(self) -> None:
        super().on_response_complete()  # which may start a request the client already sent
        if self._awaiting_head():
            self._arm(self.limits.head_s)
        else:
            self._in_request()

    def _awaiting_head(self) -> bool:
        """Whether the client has yet to send a request's head (or the rest of a body that the
        previous response left unread)."""
        return self.cycle is None or self.cycle.response_complete

    def _in_request(self) -> None:
        """A request's head is in: its body's pauses are bounded while it comes, then nothing is
        (the time the route takes is its own)."""
        if self.conn.their_state is h11.SEND_BODY:
            self._arm(self.limits.body_pause_s)  # each byte restarts it
        else:
            self._disarm()

    def handle_websocket_upgrade(self, event: h11.Request) -> None:
        self._disarm()  # the socket is the websocket protocol's from here on
        super().handle_websocket_upgrade(event)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self, seconds: float) -> None:
        self._disarm()
        if not self.transport.is_closing():
            self._deadline = self.loop.call_later(seconds, self._too_slow)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _too_slow(self) -> None:
        self._deadline = None
        if not self.transport.is_closing():
            self.transport.close()
