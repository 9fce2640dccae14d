"""Who may talk to the dashboard: a real server on loopback, asked with real HTTP and websockets
as a browser on another site, a DNS-rebinding page and a forgetful script would."""

from __future__ import annotations

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


def test_the_printed_address_trades_its_token_for_a_cookie_and_drops_it(dashboard: Dashboard) -> None:
    first = _get(dashboard, "/?" + dashboard.url.partition("?")[2])
    assert first.status_code == 303 and first.headers["location"] == "/"
    cookie = first.cookies[f"praisonai_dashboard_{dashboard.port}"]
    assert cookie == dashboard.access.token
    flags = first.headers["set-cookie"].lower()
    assert "httponly" in flags and "samesite=strict" in flags
    page = _get(dashboard, "/", cookies={f"praisonai_dashboard_{dashboard.port}": cookie})
    assert page.status_code == 200 and "<main" in page.text
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
    cookies = {f"praisonai_dashboard_{dashboard.port}": dashboard.access.token}
    foreign = _get(dashboard, "/api/about", cookies=cookies, headers={"origin": "http://evil.example"})
    assert foreign.status_code == 403
    own = _get(dashboard, "/api/about", cookies=cookies, headers={"origin": _base(dashboard)})
    assert own.status_code == 200 and own.json()["version"]


def test_a_state_change_needs_the_token_header_not_only_the_cookie(dashboard: Dashboard) -> None:
    cookies = {f"praisonai_dashboard_{dashboard.port}": dashboard.access.token}
    bare = httpx.post(_base(dashboard) + "/api/about", cookies=cookies, timeout=10)
    assert bare.status_code == 403 and "x-praisonai-token" in bare.text
    header = {"x-praisonai-token": dashboard.access.token}
    with_header = httpx.post(_base(dashboard) + "/api/about", cookies=cookies, headers=header, timeout=10)
    assert with_header.status_code == 405  # let through: the route itself takes GET only


def test_a_websocket_needs_our_origin_and_the_token(dashboard: Dashboard) -> None:
    url = f"ws://127.0.0.1:{dashboard.port}/ws/nothing"
    cookie = f"praisonai_dashboard_{dashboard.port}={dashboard.access.token}"
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
        cookies = {f"praisonai_dashboard_{board.port}": board.access.token}
        assert _get(board, "/api/about", headers=named, cookies=cookies).json()["version"]
