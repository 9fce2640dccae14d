"""The sessions pages in a real browser, over a real session: the loop here, its tools in a real
docker instance, the model a scripted server on loopback driven by the real openai SDK."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from praisonai import LocalManagedConfig, ManagedAgent
from praisonai.dashboard import Dashboard
from praisonai.llm.testing import API_KEY, Reply, ScriptedLLM, reply, tool
from praisonai.managed.sessions import delete_session, list_sessions

pytestmark = pytest.mark.docker
HOSTILE = "<img src=x onerror=window.pwned=1><b>bold</b>\x1b[31mred\x1b[0m"


@pytest.fixture
def llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
        monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
        yield server


class Gated:
    """A script whose second reply waits until the test opens the gate: the session is then
    mid-turn, its first tool call done and its second not yet asked for."""

    def __init__(self, replies: list[Reply]) -> None:
        self.replies, self.gate, self.served = replies, threading.Event(), 0

    def __call__(self, path: str, body: dict[str, Any]) -> Reply:
        self.served += 1
        if self.served == 2:
            assert self.gate.wait(120), "the test never opened the gate"
        return self.replies[self.served - 1]


@pytest.fixture
def running(llm: ScriptedLLM, home: Any, docker_ok: None) -> Iterator[tuple[str, Gated]]:
    """A session on docker in a thread, held after its first tool call; removed at the end."""
    script = Gated([
        reply("Looking.", tool("execute_command", command=f"echo first-call; printf '%s' '{HOSTILE}'")),
        reply(tool("execute_command", command="echo second-call; exit 3")),
        reply("Both ran."),
    ])  # fmt: skip
    llm.set_script(script)
    agent = ManagedAgent(compute="docker", config=LocalManagedConfig(model="gpt-4o-mini"))
    turn = threading.Thread(target=agent.run, args=("run two commands",), daemon=True)
    turn.start()
    try:
        yield _session_id(), script
    finally:
        script.gate.set()
        turn.join(120)
        agent.close()
        for record in list_sessions():
            delete_session(record.id)


def _session_id() -> str:
    deadline = time.monotonic() + 60
    while not (found := list_sessions()):
        assert time.monotonic() < deadline, "the session was never stored"
        time.sleep(0.1)
    return found[0].id


def test_the_timeline_shows_each_tool_call_while_the_session_runs(
    page: Any, dashboard: Dashboard, running: tuple[str, Gated]
) -> None:
    session_id, script = running
    page.goto(f"http://127.0.0.1:{dashboard.port}/#/sessions/{session_id}")
    timeline = page.locator("#timeline")
    first = timeline.locator('li[data-type="agent.tool_use"]').first
    expect(first).to_contain_text("$ echo first-call")
    expect(first).to_contain_text("[exit 0, ")
    expect(first).to_contain_text("first-call")
    expect(page.locator("#session-status")).to_contain_text("running")
    assert "second-call" not in timeline.inner_text()  # mid-turn: the second call is not asked yet
    script.gate.set()
    second = timeline.locator('li[data-type="agent.tool_use"]').nth(1)
    expect(second).to_contain_text("[exit 3, ")
    expect(second).to_contain_text("second-call")
    expect(timeline).to_contain_text("turn ended: end_turn")
    expect(page.locator("#session-tokens")).to_contain_text("45 (30 in, 15 out)")


def test_hostile_output_is_shown_as_text(page: Any, dashboard: Dashboard, running: tuple[str, Gated]) -> None:
    session_id, _ = running
    page.goto(f"http://127.0.0.1:{dashboard.port}/#/sessions/{session_id}")
    output = page.locator("#timeline pre.output").first
    expect(output).to_contain_text("<img src=x onerror=window.pwned=1><b>bold</b>")
    assert page.locator("#timeline img, #timeline b").count() == 0
    assert page.evaluate("window.pwned") is None


def test_the_list_shows_the_session_and_its_tokens(
    page: Any, dashboard: Dashboard, running: tuple[str, Gated]
) -> None:
    session_id, script = running
    script.gate.set()
    page.goto(f"http://127.0.0.1:{dashboard.port}/#/sessions")
    row = page.locator(f'#sessions tr[data-session="{session_id}"]')
    expect(row).to_contain_text("gpt-4o-mini")
    expect(row).to_contain_text("idle (end_turn)")
    expect(row).to_contain_text("45 (30 in, 15 out)")
    expect(row).to_contain_text("docker_")


def test_resume_from_the_page_runs_a_new_turn_and_a_second_one_meanwhile_is_refused(
    page: Any, dashboard: Dashboard, llm: ScriptedLLM, running: tuple[str, Gated]
) -> None:
    session_id, script = running
    empty = _post(dashboard, f"/api/sessions/{session_id}/resume", {"prompt": "  "})
    assert empty.status_code == 400 and "prompt is empty" in empty.text
    script.gate.set()
    page.goto(f"http://127.0.0.1:{dashboard.port}/#/sessions/{session_id}")
    expect(page.locator("#timeline")).to_contain_text("turn ended: end_turn")
    held = Gated(
        [reply("Thinking.", tool("execute_command", command="echo third")), reply("The new turn answers.")]
    )
    llm.set_script(held)
    page.locator("#prompt").fill("and once more")
    page.locator("#resume").click()
    expect(page.locator("#resume-status")).to_have_text("resumed")
    expect(page.locator("#timeline")).to_contain_text("and once more")
    expect(page.locator("#timeline")).to_contain_text("instance reattached")
    busy = _post(dashboard, f"/api/sessions/{session_id}/resume", {"prompt": "now"})
    assert busy.status_code == 409 and "running a turn" in busy.text  # its turn waits on the gate
    held.gate.set()
    expect(page.locator("#timeline")).to_contain_text("The new turn answers.")
    expect(page.locator("#session-card")).to_contain_text("2 turns")


def _post(board: Dashboard, path: str, body: dict[str, str]) -> httpx.Response:
    token = board.access.header_token
    cookie = {f"praisonai_dashboard_{board.port}": board.access.cookie_value}
    url = f"http://127.0.0.1:{board.port}{path}"
    return httpx.post(url, json=body, cookies=cookie, headers={"x-praisonai-token": token}, timeout=60)


def test_a_hosted_sessions_list_cost_is_on_its_card(page: Any, dashboard: Dashboard) -> None:
    """What the API billed, as last recorded (a stored record: no model or API is needed)."""
    from praisonai.managed.store import open_store

    with open_store() as store:
        agent = store.upsert_agent("anthropic", "coder", {"model": "claude-sonnet-4-5"})
        record, lease = store.create_session(agent, "test@host:1")
        remote = {"usage": {"list_cost": {"amount": "2507", "currency": "USD"}}}
        store.update(lease, usage={"input_tokens": 1200, "output_tokens": 80}, remote=remote)
        store.release(lease)
    page.goto(f"http://127.0.0.1:{dashboard.port}/#/sessions/{record.id}")
    expect(page.locator("#session-cost")).to_have_text("25.07 USD (list price)")
    expect(page.locator("#session-tokens")).to_contain_text("1280 (1200 in, 80 out)")


def test_an_unknown_session_is_a_404_sentence(dashboard: Dashboard) -> None:
    cookie = {f"praisonai_dashboard_{dashboard.port}": dashboard.access.cookie_value}
    for route in ("", "/events"):
        url = f"http://127.0.0.1:{dashboard.port}/api/sessions/msess_nope{route}"
        key = {"x-praisonai-token": dashboard.access.header_token}
        answer = httpx.get(url, cookies=cookie, headers=key, timeout=30)
        assert answer.status_code == 404 and "msess_nope" in answer.text
