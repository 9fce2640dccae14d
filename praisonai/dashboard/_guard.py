"""Who may talk to the dashboard, checked before any route runs (an ASGI middleware).

The dashboard drives instances (a terminal is a shell in one), so every request must prove it
comes from the person who started it, through a browser pointed at this server:

- **Host**: only this server's own loopback names (``127.0.0.1:PORT``, ``localhost:PORT``,
  ``[::1]:PORT``), so a page on another site whose DNS name is rebound to 127.0.0.1 is refused.
- **Origin**, when a browser sends one (always on a websocket and a cross-site request): the same
  names, so no other page can drive it.
- **The token** printed in the URL (as Jupyter's): the first visit trades it for a cookie of this
  server alone (its name carries the port, since cookies ignore ports) and is redirected to the
  same address without it; every request needs the cookie or the token.
- **State-changing requests** (anything but GET/HEAD) also need the token in a header, which the
  page reads from its own markup: a cookie alone, which a browser attaches by itself, never
  changes anything.

Every answer carries a content security policy that lets the page run only its own scripts, so
text an instance printed can never become code in the page.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from http.cookies import SimpleCookie
from urllib.parse import parse_qsl, urlencode, urlsplit

from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

#: The header a state-changing request carries the token in.
TOKEN_HEADER = "x-praisonai-token"
_SAFE_METHODS = frozenset({"GET", "HEAD"})
_HEADERS = {
    "content-security-policy": (
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
        "form-action 'self'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}


@dataclass(frozen=True, slots=True)
class Access:
    """What a request must show. ``hosts``: the ``Host`` values (``name:port``) answered, or
    ``None`` when the server listens beyond loopback (``--expose``) and any name is answered;
    the token is required either way."""

    token: str
    port: int
    hosts: frozenset[str] | None

    @classmethod
    def loopback(cls, token: str, port: int) -> Access:
        names = ("127.0.0.1", "localhost", "[::1]")
        return cls(token, port, frozenset(f"{name}:{port}" for name in names))

    @property
    def cookie(self) -> str:
        return f"praisonai_dashboard_{self.port}"

    def host_ok(self, host: str | None) -> bool:
        return self.hosts is None or (host or "").lower() in self.hosts

    def origin_ok(self, origin: str, host: str | None) -> bool:
        """Whether ``origin`` is this server as the request reached it."""
        parts = urlsplit(origin)
        return parts.scheme == "http" and parts.netloc.lower() == (host or "").lower() and self.host_ok(host)

    def matches(self, candidate: str | None) -> bool:
        return candidate is not None and hmac.compare_digest(candidate.encode(), self.token.encode())


class Guard:
    """The ASGI middleware that applies :class:`Access` to every HTTP request and websocket."""

    def __init__(self, app: ASGIApp, access: Access) -> None:
        self.app = app
        self.access = access

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        refusal, redirect = self._check(scope)
        if refusal is not None:
            await _refuse(scope, receive, send, refusal)
        elif redirect is not None:
            await redirect(scope, receive, send)
        else:
            await self.app(scope, receive, _with_headers(send))

    def _check(self, scope: Scope) -> tuple[str | None, Response | None]:
        """``(why refused, None)``, ``(None, a redirect that trades the URL's token for a
        cookie)`` or ``(None, None)`` to go on."""
        headers = Headers(scope=scope)
        host, origin = headers.get("host"), headers.get("origin")
        if not self.access.host_ok(host):
            return f"this dashboard answers only at its own address, not as host {host!r}", None
        websocket = scope["type"] == "websocket"
        if (origin is not None or websocket) and not self.access.origin_ok(origin or "", host):
            return f"requests from another site ({origin!r}) are refused", None
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        cookie = SimpleCookie(headers.get("cookie", "")).get(self.access.cookie)
        if not (
            self.access.matches(cookie.value if cookie else None) or self.access.matches(query.get("token"))
        ):
            return "no valid token: open the address that `praisonai dashboard` printed", None
        method = scope.get("method", "GET")
        if (
            not websocket
            and method not in _SAFE_METHODS
            and not self.access.matches(headers.get(TOKEN_HEADER))
        ):
            return f"a {method} request needs the token in its {TOKEN_HEADER} header", None
        if not websocket and method == "GET" and "token" in query:
            return None, self._to_cookie(scope, query)
        return None, None

    def _to_cookie(self, scope: Scope, query: dict[str, str]) -> Response:
        rest = urlencode([(k, v) for k, v in query.items() if k != "token"])
        response = RedirectResponse(scope["path"] + (f"?{rest}" if rest else ""), status_code=303)
        response.set_cookie(self.access.cookie, self.access.token, httponly=True, samesite="strict")
        response.headers.update(_HEADERS)
        return response


async def _refuse(scope: Scope, receive: Receive, send: Send, why: str) -> None:
    if scope["type"] == "websocket":  # refused before it is accepted: the browser sees a 403
        await send({"type": "websocket.close", "code": 1008, "reason": why[:120]})
        return
    response = PlainTextResponse(why + "\n", status_code=403, headers=_HEADERS)
    await response(scope, receive, send)


def _with_headers(send: Send) -> Send:
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            present = {name.lower() for name, _ in message.get("headers", [])}
            extra = [(k.encode(), v.encode()) for k, v in _HEADERS.items() if k.encode() not in present]
            message = {**message, "headers": [*message.get("headers", []), *extra]}
        await send(message)

    return sending
