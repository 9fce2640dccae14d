"""The dashboard served for real (uvicorn on a loopback port, in a thread) and a real browser:
Playwright driving Debian's chromium (Playwright's own browser download is not reachable here).

Browser tests skip when chromium or Playwright is absent and say why, unless
PRAISONAI_REQUIRE_BROWSER=1 (CI sets it) turns that skip into a failure.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette", reason="the dashboard extra is not installed")
from praisonai.dashboard import Dashboard

CHROMIUM = os.environ.get("PRAISONAI_CHROMIUM", "/usr/bin/chromium")


@pytest.fixture(scope="module")
def module_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One home for a module whose tests share an instance: a module overrides ``home`` with it,
    so that each test's dashboard is of the home that made the instance (another home's is
    refused)."""
    path = tmp_path_factory.mktemp("module") / "home"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PRAISONAI_HOME", str(path))
        yield path


@pytest.fixture
def dashboard(home: Path) -> Iterator[Dashboard]:
    """A dashboard over this test's own home, stopped at the end."""
    with Dashboard() as board:
        yield board


def _browser_reason() -> str | None:
    if shutil.which(CHROMIUM) is None:
        return f"no chromium at {CHROMIUM} (apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install -e '.[test]')"
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """Chromium for one module's tests. Not for the session: while Playwright's sync API is
    started, its event loop counts as running on the main thread, so a later test's
    ``anyio.run`` or ``asyncio.run`` would refuse to start."""
    reason = _browser_reason()
    if reason is not None:
        if os.environ.get("PRAISONAI_REQUIRE_BROWSER") == "1":
            pytest.fail(f"PRAISONAI_REQUIRE_BROWSER=1 but the browser tests cannot run: {reason}")
        pytest.skip(reason)
    from playwright.sync_api import expect, sync_playwright

    # as the pages' own default below: an instance's view waits on its engine, which a loaded
    # machine (two test workers beside the engines) slows past expect's 5 s
    expect.set_options(timeout=20_000)
    with sync_playwright() as playwright:
        args = ["--no-sandbox"] if os.geteuid() == 0 else []  # chromium's own sandbox refuses root
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=args)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: object, dashboard: Dashboard) -> Iterator[object]:
    """A fresh browser context (no cookies) on the dashboard's printed address, once the page it
    goes on to has loaded and asked the server who it is (the key is kept, the app runs).

    Chromium fails every request in flight with ``ERR_NETWORK_CHANGED`` when a network interface
    of this host comes or goes, as one does with each container another test starts or removes:
    a page whose modules failed so stays blank. Its ``goto`` loads such a page once more (at
    most twice), so a test sees the page, not the host's churn; any other failure stands."""
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1280, "height": 800})
    tab = context.new_page()
    tab.set_default_timeout(20_000)
    changed: list[str] = []
    tab.on(
        "requestfailed", lambda r: changed.append(r.url) if "NETWORK_CHANGED" in (r.failure or "") else None
    )
    goto = tab.goto

    def steady_goto(url: str, **kwargs: Any) -> Any:
        for _ in range(2):
            changed.clear()
            answer = goto(url, **kwargs)
            tab.wait_for_load_state("load")
            if not changed:
                return answer
        return goto(url, **kwargs)

    tab.goto(dashboard.url)  # the printed address: its token is good for one visit
    tab.wait_for_load_state("load")
    tab.goto = steady_goto
    if changed:
        tab.goto(f"http://127.0.0.1:{dashboard.port}/")
    expect(tab.locator("#about")).not_to_have_text("")
    yield tab
    context.close()
