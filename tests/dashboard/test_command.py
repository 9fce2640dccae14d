"""``praisonai dashboard`` as a user starts it: the address it prints serves, Ctrl-C ends it, and
its mistakes (a public address without --expose, a missing extra) are one sentence."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from praisonai.cli._app import run


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
