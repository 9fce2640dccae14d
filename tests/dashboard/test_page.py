"""The page itself in a real browser: the printed address opens it, and the token leaves the URL."""

from __future__ import annotations

import http.server
import threading
from http.cookies import SimpleCookie
from typing import Any

import httpx
from playwright.sync_api import expect

from praisonai import __version__
from praisonai.dashboard import Dashboard


def test_the_printed_address_opens_the_page_and_the_token_leaves_the_url(page: Any) -> None:
    assert "token=" not in page.url
    page.get_by_text(__version__, exact=False).wait_for()
    assert page.get_by_role("link", name="Instances").is_visible()
    page.get_by_role("link", name="Sessions").click()
    assert page.url.endswith("#/sessions")
    page.reload()  # the cookie, not the URL, carries the token now
    page.get_by_text(__version__, exact=False).wait_for()


def test_the_printed_address_opens_one_browser_only(page: Any, browser: Any, dashboard: Dashboard) -> None:
    """Another browser (no cookie) that opens the address from history gets one sentence; the
    first one opening it again is only led back to the page."""
    other = browser.new_context()
    try:
        late = other.new_page()
        late.goto(dashboard.url)
        assert "already used" in late.locator("body").inner_text()
        assert not other.cookies()
    finally:
        other.close()
    page.goto(dashboard.url)
    assert "token=" not in page.url
    page.get_by_text(__version__, exact=False).wait_for()


def test_the_printed_address_opens_from_a_link_on_another_site(browser: Any, dashboard: Dashboard) -> None:
    """Clicked in a chat or a web terminal: that navigation, and its redirects, carry no
    SameSite=Strict cookie, so the dashboard takes the browser on from a page of its own."""
    chat = "http://chat.example/"
    link = f'<a id="link" href="{dashboard.url}">the dashboard</a>'
    for visit in ("first", "another browser"):
        context = browser.new_context()
        try:
            tab = context.new_page()
            tab.set_default_timeout(20_000)
            tab.route(chat, lambda route: route.fulfill(body=link, content_type="text/html"))
            tab.goto(chat)
            tab.click("#link")
            if visit == "first":
                tab.get_by_text(__version__, exact=False).wait_for()
                assert "token=" not in tab.url
            else:
                expect(tab.locator("body")).to_contain_text("already used")
        finally:
            context.close()


def test_a_server_on_another_port_gets_the_cookie_but_no_way_in(page: Any, dashboard: Dashboard) -> None:
    """Cookies ignore ports: the browser that opened the dashboard sends its cookie to any
    server on 127.0.0.1 it visits (here a stand-in for another user's). With it, that server
    gets the page but no route: the key stays in the dashboard's own origin."""
    received: list[str] = []

    class Spy(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            received.append(self.headers.get("cookie", ""))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), Spy) as spy:
        serving = threading.Thread(target=spy.serve_forever, daemon=True)
        serving.start()
        try:
            page.get_by_text(__version__, exact=False).wait_for()
            page.goto(f"http://127.0.0.1:{spy.server_address[1]}/")
        finally:
            spy.shutdown()
            serving.join()
    stolen = SimpleCookie(received[0])[f"praisonai_dashboard_{dashboard.port}"].value
    assert stolen == dashboard.access.cookie_value  # what the other server has
    base = f"http://127.0.0.1:{dashboard.port}"
    cookies = {f"praisonai_dashboard_{dashboard.port}": stolen}
    markup = httpx.get(base + "/", cookies=cookies, timeout=10).text
    assert dashboard.access.header_token not in markup
    refused = httpx.get(base + "/api/instances", cookies=cookies, timeout=10)
    assert refused.status_code == 403 and "page's key" in refused.text
