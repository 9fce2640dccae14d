"""The terminal page in a real browser: xterm.js over a websocket to a real docker instance's PTY."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from praisonai import Sandbox
from praisonai.dashboard import Dashboard

pytestmark = pytest.mark.docker


@pytest.fixture
def home(module_home: Path) -> Path:
    """The dashboard's home is the one that made the instance: another home's is refused."""
    return module_home


@pytest.fixture(scope="module")
def instance(docker_ok: None, module_home: Path) -> Iterator[Sandbox]:
    with Sandbox.create("docker") as sandbox:
        yield sandbox


def _open(page: Any, board: Dashboard, instance_id: str) -> Any:
    page.goto(f"http://127.0.0.1:{board.port}/#/instances/{instance_id}/terminal")
    expect(page.locator("#terminal-status")).to_have_text("connected")
    page.locator("#terminal .xterm").click()
    return page.locator("#terminal .xterm-rows")


def _running(sandbox: Sandbox, pattern: str) -> bool:
    return sandbox.exec(f"pgrep -f '{pattern}' >/dev/null").exit_code == 0


def test_the_terminal_runs_a_command_and_shows_its_answer(
    page: Any, dashboard: Dashboard, instance: Sandbox
) -> None:
    screen = _open(page, dashboard, instance.id)
    page.keyboard.type("echo hel''lo-$((6*7))\n")  # the typed line never reads hello-42: its answer does
    expect(screen).to_contain_text("hello-42")


def test_leaving_the_page_kills_what_the_terminal_started(
    page: Any, dashboard: Dashboard, instance: Sandbox
) -> None:
    _open(page, dashboard, instance.id)
    page.keyboard.type("sleep 4242\n")
    _until(lambda: _running(instance, "sleep 424[2]"), "the terminal's sleep to start")
    page.goto("about:blank")
    _until(lambda: not _running(instance, "sleep 424[2]"), "the terminal's sleep to be killed")


def test_a_new_window_size_reaches_the_pty(page: Any, dashboard: Dashboard, instance: Sandbox) -> None:
    screen = _open(page, dashboard, instance.id)
    page.keyboard.type("stty size | sed 's/^/size=/'\n")
    expect(screen).to_contain_text(re.compile(r"size=\d+ \d+"))
    before = re.findall(r"size=(\d+) (\d+)", screen.inner_text())[-1]
    page.set_viewport_size({"width": 700, "height": 420})
    page.keyboard.type("clear; stty size | sed 's/^/size=/'\n")
    expect(screen).not_to_contain_text(f"size={before[0]} {before[1]}")
    rows = page.locator("#terminal .xterm-rows > div").count()
    expect(screen).to_contain_text(re.compile(rf"size={rows} \d+"))


def test_an_unknown_instance_is_one_sentence(page: Any, dashboard: Dashboard, docker_ok: None) -> None:
    page.goto(f"http://127.0.0.1:{dashboard.port}/#/instances/docker_0123456789ab/terminal")
    expect(page.locator("#terminal-status")).to_contain_text(
        "no instance 'docker_0123456789ab' to open a terminal in"
    )


def test_the_socket_answers_our_page_only(dashboard: Dashboard, instance: Sandbox) -> None:
    url = f"ws://127.0.0.1:{dashboard.port}/ws/instances/{instance.id}/terminal?key={dashboard.access.header_token}"
    cookie = f"praisonai_dashboard_{dashboard.port}={dashboard.access.cookie_value}"
    with pytest.raises(InvalidStatus):
        connect(url, additional_headers={"cookie": cookie}, origin="http://evil.example", open_timeout=10)
    with connect(
        url, additional_headers={"cookie": cookie}, origin=f"http://127.0.0.1:{dashboard.port}"
    ) as ours:
        ours.send(b"echo fr''om-a-socket; exit 7\n")
        received = b""
        while (message := ours.recv(timeout=30)) and isinstance(message, bytes):
            received += message
        assert b"from-a-socket" in received and message == '{"exit": 7}'


def _until(condition: Any, what: str, within_s: float = 30) -> None:
    deadline = time.monotonic() + within_s
    while not condition():
        assert time.monotonic() < deadline, f"waited {within_s:g}s for {what}"
        time.sleep(0.2)
