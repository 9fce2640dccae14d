"""Who may talk to the dashboard: a real server on loopback, asked with real HTTP and websockets
as a browser on another site, a DNS-rebinding page and a forgetful script would."""

from __future__ import annotations

import socket
from typing import Any

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from praisonai._errors import ConfigError
from praisonai.dashboard import Dashboard


def _base(board: Dashboard) -> str:
    return f"http://127.0.0.1:{board.port}"


def _get(board: Dashboard, path: str, **kwargs: Any) -> httpx.Response:
    return httpx.get(_base(board) + path, follow_redirects=False, timeout=10, **kwargs)


def _key(board: Dashboard) -> dict[str, str]:
    """The header the page's requests carry its key in."""
    return {"x-praisonai-token": board.access.header_token}


def _meta(page: str, name: str) -> str:
    """The content of the page's ``<meta name=NAME>``."""
    return page.split(f'<meta name="{name}" content="', 1)[1].split('"', 1)[0]


def test_the_printed_address_trades_its_token_for_a_cookie_and_drops_it(dashboard: Dashboard) -> None:
    first = _get(dashboard, "/?" + dashboard.url.partition("?")[2])
    assert first.status_code == 200 and _meta(first.text, "praisonai-next") == "/"
    assert _meta(first.text, "praisonai-key") == dashboard.access.header_token  # for trade.js
    cookie = first.cookies[f"praisonai_dashboard_{dashboard.port}"]
    assert cookie == dashboard.access.cookie_value
    flags = first.headers["set-cookie"].lower()
    assert "httponly" in flags and "samesite=strict" in flags
    page = _get(dashboard, "/", cookies={f"praisonai_dashboard_{dashboard.port}": cookie})
    assert page.status_code == 200 and "<main" in page.text
    assert dashboard.access.header_token not in page.text  # the cookie alone never yields the key
    assert "script-src 'self'" in page.headers["content-security-policy"]


@pytest.mark.parametrize("path", ["/", "/api/about", "/static/app.js"])
def test_no_token_or_a_wrong_one_is_refused_everywhere(dashboard: Dashboard, path: str) -> None:
    assert _get(dashboard, path).status_code == 403
    wrong = _get(dashboard, path, cookies={f"praisonai_dashboard_{dashboard.port}": "x" * 43})
    assert wrong.status_code == 403 and "praisonai dashboard" in wrong.text


@pytest.mark.parametrize("host", ["evil.example:{port}", "127.0.0.1.evil.example:{port}", "localhost:1"])
def test_a_foreign_host_header_is_refused_even_with_the_token(dashboard: Dashboard, host: str) -> None:
    """A page whose name was rebound to 127.0.0.1 sends its own name as Host."""
    token, forged = dashboard.access.token, host.format(port=dashboard.port)
    answer = _get(dashboard, "/api/about", params={"token": token}, headers={"host": forged})
    assert answer.status_code == 403 and "address" in answer.text


def test_another_sites_origin_is_refused(dashboard: Dashboard) -> None:
    cookies = {f"praisonai_dashboard_{dashboard.port}": dashboard.access.cookie_value}
    other_port = f"http://127.0.0.1:{dashboard.port + 1}"  # same site, another origin
    for origin in ("http://evil.example", "null", other_port, f"https://127.0.0.1:{dashboard.port}"):
        foreign = _get(dashboard, "/api/about", cookies=cookies, headers={"origin": origin})
        assert foreign.status_code == 403, origin
    own = _get(
        dashboard, "/api/about", cookies=cookies, headers={"origin": _base(dashboard), **_key(dashboard)}
    )
    assert own.status_code == 200 and own.json()["version"]


def test_a_state_change_needs_the_token_header_not_only_the_cookie(dashboard: Dashboard) -> None:
    cookies = {f"praisonai_dashboard_{dashboard.port}": dashboard.access.cookie_value}
    bare = httpx.post(_base(dashboard) + "/api/about", cookies=cookies, timeout=10)
    assert bare.status_code == 403 and "x-praisonai-token" in bare.text
    header = {"x-praisonai-token": dashboard.access.header_token}
    with_header = httpx.post(_base(dashboard) + "/api/about", cookies=cookies, headers=header, timeout=10)
    assert with_header.status_code == 405  # let through: the route itself takes GET only


def test_a_websocket_needs_our_origin_and_the_token(dashboard: Dashboard) -> None:
    url = f"ws://127.0.0.1:{dashboard.port}/ws/nothing"
    cookie = f"praisonai_dashboard_{dashboard.port}={dashboard.access.cookie_value}"
    for headers in ({"cookie": cookie, "origin": "http://evil.example"}, {"origin": _base(dashboard)}):
        with pytest.raises(InvalidStatus) as refused:
            connect(url, additional_headers=headers, origin=None, open_timeout=10).close()
        assert refused.value.response.status_code == 403


def test_beyond_loopback_needs_expose() -> None:
    with pytest.raises(ConfigError, match="--expose"):
        Dashboard("0.0.0.0")


def test_exposed_it_answers_any_host_name_but_still_needs_the_token(home: object) -> None:
    with Dashboard("0.0.0.0", expose=True) as board:
        assert board.access.hosts is None and board.url.startswith("http://127.0.0.1:")
        named = {"host": f"build-box.internal:{board.port}"}
        assert _get(board, "/api/about", headers=named).status_code == 403
        cookies = {f"praisonai_dashboard_{board.port}": board.access.cookie_value}
        assert _get(board, "/api/about", headers={**named, **_key(board)}, cookies=cookies).json()["version"]


def test_the_printed_token_opens_the_dashboard_once(dashboard: Dashboard) -> None:
    """A URL left in history or scrollback: once traded, it opens nothing for anyone else."""
    printed = "/?" + dashboard.url.partition("?")[2]
    traded = _get(dashboard, printed)
    assert traded.status_code == 200
    cookie_name = f"praisonai_dashboard_{dashboard.port}"
    cookies = {cookie_name: traded.cookies[cookie_name]}
    for path in (printed, "/api/about?" + dashboard.url.partition("?")[2]):
        again = _get(dashboard, path)
        assert again.status_code == 403 and "set-cookie" not in again.headers
        assert "already used" in again.text and "praisonai dashboard" in again.text
    terminal = "/ws/instances/docker_0123456789ab/terminal?"
    ws = f"ws://127.0.0.1:{dashboard.port}{terminal}" + dashboard.url.partition("?")[2]
    with pytest.raises(InvalidStatus) as refused:
        connect(ws, origin=_base(dashboard), open_timeout=10).close()  # type: ignore[arg-type]
    assert refused.value.response.status_code == 403
    assert _get(dashboard, "/api/about", cookies=cookies, headers=_key(dashboard)).json()["version"]


def test_the_cookie_is_not_the_printed_token(dashboard: Dashboard) -> None:
    """What history holds is never what the browser sends: neither as a cookie nor as the header."""
    cookie_name = f"praisonai_dashboard_{dashboard.port}"
    traded = _get(dashboard, "/?" + dashboard.url.partition("?")[2])
    assert traded.cookies[cookie_name] != dashboard.access.token
    assert "path=/" in traded.headers["set-cookie"].lower()
    forged = {cookie_name: dashboard.access.token}
    assert _get(dashboard, "/api/about", cookies=forged, headers=_key(dashboard)).status_code == 403
    cookies = {cookie_name: traded.cookies[cookie_name]}
    printed = {"x-praisonai-token": dashboard.access.token}
    posted = httpx.post(_base(dashboard) + "/api/about", cookies=cookies, headers=printed, timeout=10)
    assert posted.status_code == 403 and "x-praisonai-token" in posted.text
    page = _get(dashboard, "/", cookies={cookie_name: traded.cookies[cookie_name]})
    assert dashboard.access.token not in page.text


def test_the_trade_leads_on_to_this_server_only(dashboard: Dashboard) -> None:
    """A path that a browser would read as another host (``//evil.example``) stays a path here,
    in the trade's onward address and in the cookie holder's redirect alike."""
    query = dashboard.url.partition("?")[2]
    host = f"127.0.0.1:{dashboard.port}"
    cookie = f"praisonai_dashboard_{dashboard.port}={dashboard.access.cookie_value}"
    for extra in ("", f"Cookie: {cookie}\r\n"):
        with socket.create_connection(("127.0.0.1", dashboard.port), timeout=10) as raw:
            head = f"GET //evil.example/x?{query} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n"
            raw.sendall(f"{head}{extra}\r\n".encode())
            answer = b"".join(iter(lambda: raw.recv(65536), b"")).decode("latin-1")  # to its close
        if extra:
            (line,) = [line for line in answer.split("\r\n") if line.lower().startswith("location:")]
            target = line.partition(":")[2].strip()
        else:
            target = _meta(answer, "praisonai-next")
        assert target.startswith("/") and not target.startswith(("//", "/\\")), target


def test_a_websocket_with_a_foreign_host_is_refused(dashboard: Dashboard) -> None:
    """DNS rebinding of the terminal's socket: the page's own name arrives as Host (and Origin)."""
    cookie = f"praisonai_dashboard_{dashboard.port}={dashboard.access.cookie_value}"
    rebound = f"evil.example:{dashboard.port}"
    status = _handshake(dashboard, host=rebound, origin=f"http://{rebound}", cookie=cookie)
    assert status.startswith("HTTP/1.1 403"), status


def _handshake(board: Dashboard, **headers: str) -> str:
    """The status line a websocket handshake to the terminal gets, its headers as given."""
    lines = [
        "GET /ws/instances/docker_0123456789ab/terminal HTTP/1.1",
        "Upgrade: websocket",
        "Connection: Upgrade",
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
        "Sec-WebSocket-Version: 13",
        *(f"{name}: {value}" for name, value in headers.items()),
    ]
    with socket.create_connection(("127.0.0.1", board.port), timeout=10) as raw:
        raw.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        return raw.recv(65536).decode("latin-1").partition("\r\n")[0]


def test_only_a_get_spends_the_token(dashboard: Dashboard) -> None:
    """A websocket, a HEAD or a POST showing the unspent token is refused and leaves it unspent."""
    query = dashboard.url.partition("?")[2]
    terminal = f"ws://127.0.0.1:{dashboard.port}/ws/instances/docker_0123456789ab/terminal?{query}"
    with pytest.raises(InvalidStatus):
        connect(terminal, origin=_base(dashboard), open_timeout=10).close()  # type: ignore[arg-type]
    assert httpx.head(f"{_base(dashboard)}/?{query}", timeout=10).status_code == 403
    assert httpx.post(f"{_base(dashboard)}/api/about?{query}", timeout=10).status_code == 403
    assert _get(dashboard, f"/?{query}").status_code == 200


def test_the_cookie_alone_opens_no_route(dashboard: Dashboard) -> None:
    """A browser sends the cookie of 127.0.0.1 to every port there, so another server on this
    host that the browser visits (another user's) has it: with it alone, nothing opens but the
    page, and the page holds no key."""
    cookies = {f"praisonai_dashboard_{dashboard.port}": dashboard.access.cookie_value}
    for path in ("/api/about", "/api/instances", "/api/sessions/events"):
        refused = _get(dashboard, path, cookies=cookies)
        assert refused.status_code == 403 and "page's key" in refused.text, path
    stop = httpx.post(
        _base(dashboard) + "/api/instances/docker_0123456789ab/stop", cookies=cookies, timeout=10
    )
    assert stop.status_code == 403
    terminal = f"ws://127.0.0.1:{dashboard.port}/ws/instances/docker_0123456789ab/terminal"
    cookie = f"praisonai_dashboard_{dashboard.port}={dashboard.access.cookie_value}"
    with pytest.raises(InvalidStatus) as refused_socket:
        connect(
            terminal, additional_headers={"cookie": cookie}, origin=_base(dashboard), open_timeout=10
        ).close()  # type: ignore[arg-type]
    assert refused_socket.value.response.status_code == 403
    page = _get(dashboard, "/", cookies=cookies)
    assert page.status_code == 200 and dashboard.access.header_token not in page.text
    with_key = f"{terminal}?key={dashboard.access.header_token}"
    with connect(
        with_key, additional_headers={"cookie": cookie}, origin=_base(dashboard), open_timeout=10
    ) as ours:  # type: ignore[arg-type]
        assert "no instance" in str(ours.recv(timeout=30))
