"""``praisonai dashboard`` as a user starts it: the address it prints serves, Ctrl-C ends it, and
its mistakes (a public address without --expose, a missing extra) are one sentence."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from praisonai.cli._app import run


@pytest.mark.alone  # a loaded machine delays its Ctrl-C past the server's start
def test_the_printed_address_serves_and_ctrl_c_ends_it(home: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    with subprocess.Popen(
        [sys.executable, "-m", "praisonai", "dashboard"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    ) as server:
        try:
            line = server.stdout.readline().decode()
            assert line.startswith("praisonai dashboard: http://127.0.0.1:"), line
            url = line.split(": ", 1)[1].strip()
            answer = httpx.get(url, timeout=10)  # the trade: the page that keeps the key and goes on
            assert answer.status_code == 200 and "praisonai-key" in answer.text
            server.send_signal(signal.SIGINT)
            assert server.wait(timeout=30) == 130  # ended by SIGINT, as a shell reports it
            assert b"Traceback" not in server.stderr.read()
        finally:
            server.kill()


def test_a_public_address_needs_expose_and_then_warns(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(Exception, match="--expose") as refused:
        run(["dashboard", "--host", "0.0.0.0"])
    assert "shell" in str(refused.value)


def test_without_the_extra_it_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    found = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "uvicorn" else found(name, *a)
    )
    with pytest.raises(ImportError, match=r"pip install 'praisonai\[dashboard\]'"):
        run(["dashboard"])


def test_open_keeps_the_token_off_the_browsers_command_line(home: Path, tmp_path: Path) -> None:
    """Any local user reads a process's argv (/proc/PID/cmdline, ps): the browser started by
    --open gets a file of the user's own that leads to the address, never the token itself."""
    seen = tmp_path / "argv"
    browser = tmp_path / "browser"
    browser.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {seen}.part && mv {seen}.part {seen}\n')
    browser.chmod(0o700)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), "BROWSER": str(browser)}
    with subprocess.Popen(
        [sys.executable, "-m", "praisonai", "dashboard", "--open"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    ) as server:
        try:
            url = server.stdout.readline().decode().split(": ", 1)[1].strip()
            token = url.partition("token=")[2]
            for _ in range(300):  # the browser starts beside the server: up to 15 s
                if seen.exists() or server.poll() is not None:
                    break
                time.sleep(0.05)
            argv = seen.read_text()
            assert token and token not in argv, argv
            opened = Path(argv.strip().removeprefix("file://"))
            assert opened.stat().st_mode & 0o077 == 0  # the user's alone
            assert url in opened.read_text()  # it leads to the address, token and all
            server.send_signal(signal.SIGINT)
            assert server.wait(timeout=30) == 130
            assert not opened.exists()  # gone with the server
        finally:
            server.kill()
