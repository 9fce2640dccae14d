"""The page itself in a real browser: the printed address opens it, and the token leaves the URL."""

from __future__ import annotations

from typing import Any

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
