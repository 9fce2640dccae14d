"""Progress where people wait, through a real pseudo-terminal: shown on a terminal, and nothing
of it when the output is piped."""

from __future__ import annotations

import os
import re
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kit import provisioned

from praisonai.llm.testing import API_KEY, ScriptedLLM, reply

_REPO = Path(__file__).resolve().parents[2]
_RUN = ("managed", "run", "say it", "--compute", "local", "--model", "gpt-4o-mini")


@pytest.fixture
def env(home: Path) -> Iterator[dict[str, str]]:
    with ScriptedLLM([reply("The answer.", delay_s=1.5)]) as llm:
        yield {
            **os.environ,
            "PYTHONPATH": str(_REPO),
            "OPENAI_BASE_URL": f"{llm.url}/v1",
            "OPENAI_API_KEY": API_KEY,
            "TERM": "xterm",
            "COLUMNS": "120",
        }


def _on_a_terminal(args: tuple[str, ...], env: dict[str, str]) -> str:
    """What the command prints on a pseudo-terminal (stdout and stderr both), to its end."""
    leader, follower = os.openpty()
    with subprocess.Popen(
        [sys.executable, "-m", "praisonai", *args], stdin=follower, stdout=follower, stderr=follower, env=env
    ) as child:
        os.close(follower)
        seen = b""
        poller = select.poll()  # not select(): a test process may hold descriptors past 1023
        poller.register(leader, select.POLLIN)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if poller.poll(1000):
                try:
                    chunk = os.read(leader, 65536)
                except OSError:  # EIO: every holder of the terminal closed it
                    break
                if not chunk:
                    break
                seen += chunk
        os.close(leader)
        assert child.wait(30) == 0, seen
    return seen.decode(errors="replace")


def test_a_managed_run_says_it_waits_for_the_model_before_its_first_token(env: dict[str, str]) -> None:
    shown = _on_a_terminal(_RUN, env)
    assert "waiting for the model (gpt-4o-mini)" in shown
    assert shown.index("waiting for the model") < shown.index("The answer.")


def test_piped_a_managed_run_prints_no_progress(env: dict[str, str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "praisonai", *_RUN], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "The answer.\n"
    assert "waiting for the model" not in done.stderr


@pytest.fixture
def instance(home: Path) -> Iterator[str]:
    """A docker instance, removed after."""
    from praisonai.compute.providers.docker import DockerCompute

    provider = DockerCompute()
    if reason := provider.unavailable_reason():
        pytest.skip(reason)
    for _, instance_id in provisioned(provider):
        yield instance_id


def test_sandbox_cp_shows_the_bytes_it_moves_and_nothing_when_piped(
    instance: str, env: dict[str, str], tmp_path: Path
) -> None:
    big = tmp_path / "big.bin"
    with big.open("wb") as out:
        out.truncate(128 << 20)  # sparse here; 128 MiB of archive on the way in
    shown = _on_a_terminal(("sandbox", "cp", str(big), f"{instance}:big.bin"), env)
    assert re.search(r"[1-9][0-9.]* MB\b", shown) and "/s" in shown, shown
    piped = subprocess.run(
        [sys.executable, "-m", "praisonai", "sandbox", "cp", f"{instance}:big.bin", str(tmp_path / "back")],
        env=env, capture_output=True, timeout=120, check=False,
    )  # fmt: skip
    assert (piped.returncode, piped.stdout, piped.stderr) == (0, b"", b"")
    assert (tmp_path / "back").stat().st_size == 128 << 20
