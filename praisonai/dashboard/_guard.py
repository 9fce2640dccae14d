"""Who may talk to the dashboard, checked before any route runs (an ASGI middleware).

The dashboard drives instances (a terminal is a shell in one), so every request must prove it
comes from the person who started it, through a browser pointed at this server:

- **Host**: only this server's own loopback names (``127.0.0.1:PORT``, ``localhost:PORT``,
  ``[::1]:PORT``), so a page on another site whose DNS name is rebound to 127.0.0.1 is refused.
- **Origin**, when a browser sends one (always on a websocket and a cross-site request): the same
  names, so no other page can drive it.
- **The token** printed in the URL opens the dashboard once: the first GET that shows it trades it
  for a cookie of this server alone (its name carries the port; its value a secret of its own)
  and for the page's key, which a page of this server hands to its own script to keep in the
  origin's storage before it goes on to the address without the token. After that the token
  opens nothing, for anyone: an address left in history or scrollback is no credential.
  (Jupyter's token and VS Code's connection token stay valid for the server's life; this one is
  spent like an OAuth authorization code, without the code's revocation of what it was traded
  for: the browser that traded it keeps working.)
- **The page's key** goes with every API request and websocket (the ``x-praisonai-token``
  header; a ``key`` query parameter for event streams and websockets, which take no header),
  besides the cookie. A browser sends a cookie of 127.0.0.1 to every port of 127.0.0.1, so any
  other server there that the browser visits (another user's) receives it; the key lives in
  storage that no other origin, another port included, can read. The page's markup holds no
  secret, so the cookie alone opens only the page and its static files.
- **State-changing requests** (anything but GET/HEAD) carry the key in the header: a cookie,
  which a browser attaches by itself, never changes anything.

Every answer carries a content security policy that lets the page run only its own scripts, so
text an instance printed can never become code in the page.
"""

from __future__ import annotations

import hmac
import html
import secrets
import threading
from dataclasses import dataclass, field
from enum import Enum
from http.cookies import SimpleCookie
from urllib.parse import parse_qsl, urlencode, urlsplit

from starlette.datastructures import Headers
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

#: The header the page's requests carry its key in (the name is older than the key).
TOKEN_HEADER = "x-praisonai-token"
_SAFE_METHODS = frozenset({"GET", "HEAD"})
#: The paths that need the page's key besides the cookie: every route but the page's own files.
_KEYED = ("/api/", "/ws/")
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


#: What a refused request is told when it shows no valid secret at all.
NO_TOKEN = "no valid token: open the address that `praisonai dashboard` printed"
#: What an API request or a websocket without the page's key is told.
NO_KEY = (
    "this request needs the page's key, which only the dashboard's page has: open the page "
    "(or, in a new browser, the address that `praisonai dashboard` printed)"
)
#: What a request showing the printed token after its trade is told.
TOKEN_USED = (
    "this link was already used: it opens the dashboard once, in the browser that opened it "
    "first; run `praisonai dashboard` again for a new link"
)


class Trade(Enum):
    """What showing a token to :meth:`Access.trade` did."""

    TRADED = "traded"  # it was the printed token, unused until now: now it is used
    USED = "used"  # it was the printed token, already traded
    WRONG = "wrong"  # it was never the token


class _Spent:
    """Whether the printed token has been traded, set once under a lock."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.done = False


@dataclass(frozen=True, slots=True)
class Access:
    """What a request must show. ``token``: the printed one, good for one trade;
    ``cookie_value`` and ``header_token`` (the page's key): what the browser then shows (new
    secrets, never the printed token). ``hosts``: the ``Host`` values (``name:port``) answered,
    or ``None`` when the server listens beyond loopback (``--expose``) and any name is answered;
    the secrets are required either way."""

    token: str
    port: int
    hosts: frozenset[str] | None
    cookie_value: str = field(default_factory=lambda: secrets.token_urlsafe(32), repr=False)
    header_token: str = field(default_factory=lambda: secrets.token_urlsafe(32), repr=False)
    _spent: _Spent = field(default_factory=_Spent, repr=False, compare=False)

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

    def trade(self, candidate: str) -> Trade:
        """Spend the printed token if ``candidate`` is it (compared in constant time) and it is
        unspent: only the first such call, across every thread, gets :attr:`Trade.TRADED`."""
        if not _same(candidate, self.token):
            return Trade.WRONG
        with self._spent.lock:
            if self._spent.done:
                return Trade.USED
            self._spent.done = True
            return Trade.TRADED

    def spent(self, candidate: str | None) -> bool:
        """Whether ``candidate`` is the printed token, already traded (nothing is spent here)."""
        return _same(candidate, self.token) and self._spent.done

    def cookie_ok(self, candidate: str | None) -> bool:
        return _same(candidate, self.cookie_value)

    def header_ok(self, candidate: str | None) -> bool:
        return _same(candidate, self.header_token)


def _same(candidate: str | None, secret: str) -> bool:
    return candidate is not None and hmac.compare_digest(candidate.encode(), secret.encode())


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
        """``(why refused, None)``, ``(None, a response that takes the browser on)`` or
        ``(None, None)`` to go on."""
        headers = Headers(scope=scope)
        host, origin = headers.get("host"), headers.get("origin")
        if not self.access.host_ok(host):
            return f"this dashboard answers only at its own address, not as host {host!r}", None
        websocket = scope["type"] == "websocket"
        if (origin is not None or websocket) and not self.access.origin_ok(origin or "", host):
            return f"requests from another site ({origin!r}) are refused", None
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        cookie = SimpleCookie(headers.get("cookie", "")).get(self.access.cookie)
        signed_in = self.access.cookie_ok(cookie.value if cookie else None)
        if not websocket and scope.get("method") == "GET" and "token" in query:
            return self._trade(scope, query, signed_in, _from_another_site(headers))
        if not signed_in:
            return (TOKEN_USED if self.access.spent(query.get("token")) else NO_TOKEN), None
        key = headers.get(TOKEN_HEADER)
        changes = not websocket and scope.get("method") not in _SAFE_METHODS
        if changes and not self.access.header_ok(key):
            return f"a {scope['method']} request needs the page's key in its {TOKEN_HEADER} header", None
        keyed = scope["path"].startswith(_KEYED)
        if keyed and not (self.access.header_ok(key) or self.access.header_ok(query.get("key"))):
            return NO_KEY, None
        return None, None

    def _trade(
        self, scope: Scope, query: dict[str, str], signed_in: bool, cross_site: bool
    ) -> tuple[str | None, Response | None]:
        """A GET showing a token: the address without it, with the cookie if this is the
        token's one trade; the cookie's holder reopening the printed address gets only the
        address (no second cookie); anyone else gets one sentence.

        The trade's answer is a page of this server (:meth:`_handover`) whose script keeps the
        page's key and goes on: a navigation of the dashboard's own, so it carries the
        ``SameSite=Strict`` cookie even when a link on another site (a chat, a web terminal)
        started the first one, which with its redirects carries none. For the same reason such a
        navigation showing the spent token gets a refresh of the same address (:func:`_hop`), which
        carries the cookie if the browser holds it.
        """
        if signed_in:
            return None, self._clean(scope, query)
        outcome = self.access.trade(query["token"])
        if outcome is Trade.WRONG:
            return NO_TOKEN, None
        if outcome is Trade.USED:
            return (None, _hop(scope)) if cross_site else (TOKEN_USED, None)
        response = self._handover(scope, query)
        response.set_cookie(
            self.access.cookie, self.access.cookie_value, path="/", httponly=True, samesite="strict"
        )
        return None, response

    def _handover(self, scope: Scope, query: dict[str, str]) -> Response:
        """The trade's page: the key for ``static/trade.js`` to keep, and where it goes on to."""
        rest = urlencode([(k, v) for k, v in query.items() if k != "token"])
        onward = html.escape(_same_server(scope) + (f"?{rest}" if rest else ""), quote=True)
        page = (
            f'<!doctype html><meta name="praisonai-key" content="{self.access.header_token}">'
            f'<meta name="praisonai-next" content="{onward}">'
            '<script type="module" src="/static/trade.js"></script>'
            "<p>Opening the dashboard…</p>\n"
        )
        return HTMLResponse(page, headers=_HEADERS)

    def _clean(self, scope: Scope, query: dict[str, str]) -> Response:
        """A redirect to the same path on this server, the query without its token."""
        path = _same_server(scope)
        rest = urlencode([(k, v) for k, v in query.items() if k != "token"])
        response = RedirectResponse(path + (f"?{rest}" if rest else ""), status_code=303)
        response.headers.update(_HEADERS)
        return response


def _same_server(scope: Scope) -> str:
    """The request's path as received (still percent-encoded), its leading slashes made one:
    as a link, ``//evil.example`` would lead to another host."""
    raw: bytes = scope.get("raw_path") or scope["path"].encode()
    return "/" + raw.decode("latin-1").lstrip("/\\")


def _hop(scope: Scope) -> Response:
    """A page of this server that opens the same address again at once (a refresh)."""
    query = scope.get("query_string", b"").decode("latin-1")
    address = html.escape(_same_server(scope) + (f"?{query}" if query else ""), quote=True)
    page = (
        f'<!doctype html><meta http-equiv="refresh" content="0; url={address}">'
        f'<p><a href="{address}">Open the dashboard</a></p>\n'
    )
    return HTMLResponse(page, headers=_HEADERS)


def _from_another_site(headers: Headers) -> bool:
    """Whether the browser says a link or script on another site started this navigation."""
    return headers.get("sec-fetch-site") == "cross-site" and headers.get("sec-fetch-mode") == "navigate"


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
