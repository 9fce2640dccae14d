"""A managed session whose docker instance idleness paused (``idle_action: pause`` in its
environment.yaml) finds its workspace when resumed from another process: the instance is
resumed under the same id, and the resume says so on stderr and in the session's events.
Real docker, the real CLI in child processes, the scripted model."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from praisonai.compute.providers.docker import container_name
from praisonai.llm.testing import API_KEY, ScriptedLLM, reply, tool
from praisonai.managed.store import SqliteSessionStore

pytestmark = pytest.mark.usefixtures("docker_ok")


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        yield server


@pytest.fixture
def project(tmp_path: Path, home: Path, llm: ScriptedLLM) -> Iterator[tuple[Path, dict[str, str]]]:
    """A project whose environment pauses its docker instance after 2 idle seconds; the child's
    env. Every instance made is removed afterwards, by id."""
    folder = tmp_path / "project"
    (folder / ".praisonai").mkdir(parents=True)
    text = "backend: docker\nidle_timeout: 2\nidle_action: pause\n"
    (folder / ".praisonai" / "environment.yaml").write_text(text)
    base = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "CLAUDE_API_KEY")}
    env = {**base, "PRAISONAI_HOME": str(home), "OPENAI_BASE_URL": f"{llm.url}/v1", "OPENAI_API_KEY": API_KEY}
    yield folder, env
    from praisonai._ledger import Ledger

    for entry in Ledger.default().entries():
        subprocess.run(["docker", "rm", "-f", "-v", container_name(entry.instance_id)], capture_output=True)


def managed(project: tuple[Path, dict[str, str]], *args: str) -> subprocess.CompletedProcess[str]:
    folder, env = project
    return subprocess.run(
        [sys.executable, "-m", "praisonai", "managed", *args],
        capture_output=True, text=True, timeout=180, env=env, cwd=folder, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _state(instance_id: str) -> str:
    argv = ["docker", "inspect", "-f", "{{.State.Status}}", container_name(instance_id)]
    found = subprocess.run(argv, capture_output=True, text=True)
    return found.stdout.strip() if found.returncode == 0 else "gone"


@pytest.mark.alone  # it waits out an idle pause
def test_a_session_resumed_after_its_instance_paused_finds_its_file(
    project: tuple[Path, dict[str, str]], llm: ScriptedLLM
) -> None:
    llm.set_script([reply(tool("write_file", path="note.txt", content="kept")), reply("written")])
    first = managed(project, "run", "write note.txt", "--model", "gpt-4o-mini")
    assert first.returncode == 0, first.stderr
    session_id = first.stderr.splitlines()[0].removeprefix("session: ")
    store = SqliteSessionStore()
    (made,) = [s.event for s in store.events(session_id) if s.event.type == "sandbox.provisioned"]
    instance_id = made.data["instance_id"]
    deadline = time.monotonic() + 30
    while _state(instance_id) != "exited":  # its owner is gone: the watchdog pauses it when idle
        assert time.monotonic() < deadline, f"not paused: {_state(instance_id)}"
        time.sleep(0.2)

    llm.set_script([reply(tool("read_file", path="note.txt")), reply("it says kept")])
    again = managed(project, "sessions", "resume", session_id, "what does note.txt say?")
    assert again.returncode == 0, again.stderr
    assert f"sandbox: docker {instance_id} (resumed from pause, its files kept)" in again.stderr
    assert again.stdout.endswith("it says kept\n") and "kept" in again.stdout
    kinds = [s.event for s in SqliteSessionStore().events(session_id)]
    resumed = [e for e in kinds if e.type == "sandbox.resumed"]
    assert [e.data["instance_id"] for e in resumed] == [instance_id]
    assert not [e for e in kinds if e.type == "sandbox.replaced"]
    assert _state(instance_id) == "running"
