"""The page itself in a real browser: the printed address opens it, and the token leaves the URL."""

from __future__ import annotations

from typing import Any

from praisonai import __version__


def test_the_printed_address_opens_the_page_and_the_token_leaves_the_url(page: Any) -> None:
    assert "token=" not in page.url
    page.get_by_text(__version__, exact=False).wait_for()
    assert page.get_by_role("link", name="Instances").is_visible()
    page.get_by_role("link", name="Sessions").click()
    assert page.url.endswith("#/sessions")
    page.reload()  # the cookie, not the URL, carries the token now
    page.get_by_text(__version__, exact=False).wait_for()
