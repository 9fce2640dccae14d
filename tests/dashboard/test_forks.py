"""A session's forks in a real browser: a real two-turn session on a local instance (the model a
scripted server on loopback, so nothing is billed) forked at turn 1 from its page, then the
sessions list drawn as a tree of forks. Then the fork route asked as an attacker would: without the
page's key, from another site, with bad turns and titles, a hostile title in the tree. Every test
deletes its sessions (their instances and snapshots with them), also when it fails."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from praisonai._errors import SessionNotFoundError
from praisonai._ledger import Ledger
from praisonai.compute import list_snapshots
from praisonai.dashboard import Dashboard
from praisonai.llm.testing import API_KEY, ScriptedLLM, reply, tool
from praisonai.managed import ManagedAgent
from praisonai.managed.sessions import delete_session, list_sessions
from praisonai.managed.store import open_store

HOSTILE = "<img src=x onerror=window.pwned=1><b>bold</b>"


@pytest.fixture
def two_turns(home: Path) -> Iterator[str]:
    """A session of two turns on a local instance, a checkpoint at the end of each; every session
    of the home is deleted at the end, and nothing may be left of them."""
    try:
        with ScriptedLLM() as llm:
            llm.set_script([
                reply(tool("write_file", path="a.txt", content="one")), reply("wrote a"),
                reply(tool("write_file", path="b.txt", content="two")), reply("wrote b"),
            ])  # fmt: skip
            config = {"model": "gpt-4o-mini", "environment": False, "checkpoints": True}
            served = f"{llm.url}/v1"
            with ManagedAgent(compute="local", config=config, api_key=API_KEY, base_url=served) as agent:
                agent.run("write a")
                agent.run("write b")
                assert agent.session_id is not None
                session_id = agent.session_id
        yield session_id
    finally:
        for record in list_sessions():  # forks first: the newest updated come first
            with contextlib.suppress(SessionNotFoundError):
                delete_session(record.id)
        assert list_snapshots() == [] and Ledger.default().entries() == []


def test_a_fork_at_turn_1_from_the_page_and_the_tree_of_forks(
    page: Any, dashboard: Dashboard, two_turns: str
) -> None:
    base = f"http://127.0.0.1:{dashboard.port}"
    page.goto(f"{base}/#/sessions/{two_turns}")
    expect(page.locator("#session-card")).to_contain_text("2 turns")
    expect(page.locator("#fork-turn")).to_have_value("2")  # the last turn until another is typed
    page.locator("#fork-turn").fill("1")
    page.locator("#fork-title").fill(HOSTILE)
    page.locator("#fork").click()
    expect(page.locator("#fork-status")).to_contain_text("forked at turn 1: msess_")
    fork = page.locator("#fork-link").inner_text()
    assert fork != two_turns

    page.locator("#fork-link").click()
    expect(page.locator("#timeline")).to_contain_text(f"forked from {two_turns} at turn 1")
    expect(page.locator("#session-card")).to_contain_text("1 turn")
    expect(page.locator("#session-card")).to_contain_text(HOSTILE)
    # and a fork of the fork, through the route the button calls
    deeper = _fork(dashboard, fork, {"at_turn": 1}).json()["session_id"]

    page.goto(f"{base}/#/sessions")
    rows = page.locator("#sessions tbody tr")
    expect(rows).to_have_count(3)
    assert [rows.nth(i).get_attribute("data-session") for i in range(3)] == [two_turns, fork, deeper]
    assert [rows.nth(i).get_attribute("data-depth") for i in range(3)] == ["0", "1", "2"]
    child = page.locator(f'#sessions tr[data-session="{fork}"]')
    assert child.get_attribute("data-parent") == two_turns
    expect(child).to_contain_text(f"↳ {fork} at turn 1")
    expect(child).to_contain_text(HOSTILE)  # its title, as text
    assert page.locator("#page img, #page b").count() == 0
    assert page.evaluate("window.pwned") is None


def _fork(
    board: Dashboard, session_id: str, body: object, *, key: bool = True, origin: str | None = None
) -> httpx.Response:
    cookie = {f"praisonai_dashboard_{board.port}": board.access.cookie_value}
    headers = {"x-praisonai-token": board.access.header_token} if key else {}
    if origin is not None:
        headers["origin"] = origin
    url = f"http://127.0.0.1:{board.port}/api/sessions/{session_id}/fork"
    return httpx.post(url, json=body, cookies=cookie, headers=headers, timeout=60)


def _state() -> tuple[list[str], list[str], list[str]]:
    """The ids of the home's sessions, snapshots and instances."""
    return (
        [r.id for r in list_sessions()],
        [s.id for s in list_snapshots()],
        [e.instance_id for e in Ledger.default().entries()],
    )


def test_a_fork_asked_cross_site_or_with_bad_input_makes_nothing(
    dashboard: Dashboard, two_turns: str
) -> None:
    before = _state()
    bare = _fork(dashboard, two_turns, {"at_turn": 1}, key=False)  # a form post riding the cookie
    assert bare.status_code == 403 and "x-praisonai-token" in bare.text
    for origin in ("http://evil.example", "null", f"http://localhost:{dashboard.port + 1}"):
        forged = _fork(dashboard, two_turns, {"at_turn": 1}, origin=origin)
        assert forged.status_code == 403 and "another site" in forged.text, origin
    refused = [
        ({"at_turn": 0}, 400, f"--at-turn must be a turn of session {two_turns}, 1 to 2, not 0"),
        ({"at_turn": 3}, 400, "1 to 2, not 3"),
        ({"at_turn": "1"}, 400, "1 to 2, not '1'"),
        ({"at_turn": True}, 400, "1 to 2, not True"),
        ({"title": ["x"]}, 400, "the fork's title is text, not list"),
        ({"title": "two\nlines"}, 400, "the fork's title cannot be"),
        ([1], 400, "must be a JSON object"),
    ]
    for body, status, sentence in refused:
        answer = _fork(dashboard, two_turns, body)
        assert (answer.status_code, sentence in answer.text) == (status, True), (body, answer.text)
    unknown = _fork(dashboard, "msess_0123456789abcdef", {})
    assert unknown.status_code == 404 and "msess_0123456789abcdef" in unknown.text
    assert _state() == before


def test_a_forked_from_of_another_shape_is_no_parent(dashboard: Dashboard, home: Path) -> None:
    """An agent's config writes metadata too: what is not ``managed.fork``'s record draws no edge."""
    shapes: list[dict[str, Any]] = [
        {"forked_from": "msess_x"},
        {"forked_from": {"session_id": 7, "at_turn": 1}},
        {"forked_from": {"session_id": "msess_x", "at_turn": True}},
    ]
    with open_store() as store:
        agent = store.upsert_agent("local", "coder", {"model": "gpt-4o-mini"})
        for metadata in shapes:
            store.release(store.create_session(agent, "test@host:1", metadata=metadata)[1])
        try:
            cookie = {f"praisonai_dashboard_{dashboard.port}": dashboard.access.cookie_value}
            key = {"x-praisonai-token": dashboard.access.header_token}
            url = f"http://127.0.0.1:{dashboard.port}/api/sessions"
            rows = httpx.get(url, cookies=cookie, headers=key, timeout=30).json()["sessions"]
            assert [row["forked_from"] for row in rows] == [None, None, None]
        finally:
            for record in store.list_sessions():
                store.delete_session(record.id)
