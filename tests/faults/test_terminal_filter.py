"""What an instance, a vendor API or whoever shares the engine controls reaches the terminal
harmless (issue 43 item 7): file names and labels holding ESC/OSC, a one-byte CSI (U+009B), a bidi
override and a newline. The real commands in child processes, one docker instance for the module.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from kit import managed_cli

import praisonai
from praisonai.llm.testing import ScriptedLLM, reply, tool
from praisonai.managed.events import Event, text_content
from praisonai.managed.instance._tools import InstanceTools
from praisonai.managed.store import SqliteSessionStore
from praisonai.sandbox import AsyncSandbox, Sandbox

_REPO = Path(praisonai.__file__).parents[1]
#: What must never reach a terminal: ESC, BEL, a one-byte CSI, a bidi override.
UNSAFE = ("\x1b", "\x07", "\x9b", "\u202e")
#: File names an instance makes, each meant to be one row wherever it is listed.
HOSTILE_NAMES = ("new\nline", "osc\x1b]0;pwned\x07", "csi\x9b2J", "bidi\u202eexe.txt")


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "praisonai", *args],
        capture_output=True, text=True, timeout=120, cwd=_REPO, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _octal(name: str) -> str:
    """``name`` as a POSIX printf format: each of its UTF-8 bytes an octal escape."""
    return "".join(f"\\{byte:03o}" for byte in name.encode())


def _strings(data: object) -> set[str]:
    """Every string in a JSON document."""
    if isinstance(data, dict):
        return set().union(*map(_strings, data.values())) if data else set()
    if isinstance(data, list):
        return set().union(*map(_strings, data)) if data else set()
    return {data} if isinstance(data, str) else set()


def harmless(r: subprocess.CompletedProcess[str]) -> bool:
    return not [c for c in UNSAFE if c in r.stdout + r.stderr]


@pytest.fixture(scope="module")
def sandbox(docker_ok: None) -> Iterator[Sandbox]:
    """A docker instance whose /workspace/hostile holds one file of each hostile name."""
    with Sandbox.create("docker", environment=False) as sb:
        names = " ".join(f"\"$(printf '{_octal(n)}')\"" for n in HOSTILE_NAMES)
        sb.exec(f"mkdir hostile && cd hostile && touch {names} plain", check=True)
        yield sb


def test_list_files_shows_a_name_with_a_newline_on_one_row(sandbox: Sandbox) -> None:
    async def listed() -> str:
        asb = await AsyncSandbox.connect(
            sandbox.id, type(sandbox.provider).from_options(sandbox.provider.options)
        )
        try:
            outcome = await InstanceTools(asb).call("list_files", {"path": "hostile"})
            assert not outcome.is_error, outcome.content
            return outcome.content
        finally:
            await asb.close()

    rows = anyio.run(listed).splitlines()
    assert len(rows) == len(HOSTILE_NAMES) + 1, rows  # one row a file: no phantom "line"
    assert "plain" in rows and '"new\\nline"' in rows, rows  # the exact name, escaped as C does


def test_sandbox_cp_of_hostile_names_prints_nothing_raw_and_keeps_them(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    r = cli("sandbox", "cp", f"{sandbox.id}:/workspace/hostile", str(tmp_path / "got"))
    assert r.returncode == 0 and harmless(r), (r.stdout, r.stderr)
    assert sorted(p.name for p in (tmp_path / "got").iterdir()) == sorted([*HOSTILE_NAMES, "plain"])


#: An owner label as someone else on the engine may write it.
HOSTILE_OWNER = "evil\nphantom\x1b]0;pwned\x07\x9b2J\u202e@host:1"


@pytest.fixture
def hostile_container(docker_ok: None) -> Iterator[str]:
    """A container someone else on the engine made, with a valid instance id (ids are checked)
    and a hostile owner label; its instance id."""
    instance_id = f"docker_{uuid.uuid4().hex[:12]}"
    run = ["docker", "run", "-d", "--rm", "--label", f"praisonai.instance={instance_id}",
           "--label", f"praisonai.owner={HOSTILE_OWNER}", "--label", "praisonai.created=1",
           "--label", "praisonai.provider=docker", "praisonai-sandbox:latest", "sleep", "300"]  # fmt: skip
    container = subprocess.run(run, capture_output=True, text=True, check=True).stdout.strip()
    try:
        yield instance_id
    finally:
        subprocess.run(["docker", "rm", "-f", container], capture_output=True, check=False)


def test_compute_ps_shows_a_hostile_label_on_one_row(hostile_container: str) -> None:
    r = cli("compute", "ps")
    assert r.returncode == 0 and harmless(r), (r.stdout, r.stderr)
    rows = [line for line in r.stdout.splitlines() if hostile_container in line]
    assert len(rows) == 1 and "phantom" in rows[0], r.stdout  # the owner stays on its instance's row
    assert not [line for line in r.stdout.splitlines() if "phantom" in line and line not in rows], r.stdout
    r = cli("compute", "ps", "--json")
    assert r.returncode == 0, r.stderr
    owners = {row["instance"]: row["owner"] for row in json.loads(r.stdout)}
    assert owners[hostile_container] == HOSTILE_OWNER  # exact, escaped by JSON


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        yield server


def managed(home: Path, llm: ScriptedLLM, *args: str) -> subprocess.CompletedProcess[str]:
    return managed_cli(home, llm.url, *args)


HOSTILE = "t\x1b]0;pwned\x07i\x1b[2Jt\x9b31m\u202ele"


def test_the_live_view_shows_a_model_s_hostile_tool_calls_and_outputs_harmless(
    home: Path, llm: ScriptedLLM
) -> None:
    """A model that names a tool with escape sequences, runs a command printing them and lists
    files named with them: the live view and the stored transcript show none of them raw."""
    make = " ".join(f"\"$(printf '{_octal(n)}')\"" for n in HOSTILE_NAMES)
    command = f"printf '{_octal(HOSTILE)}'; touch {make}"
    llm.set_script([
        reply(tool(HOSTILE, path="."), tool("execute_command", command=command)),
        reply(tool("list_files", path=".")),
        reply("listed"),
    ])  # fmt: skip
    r = managed(home, llm, "run", "go", "--compute", "local")
    try:
        assert r.returncode == 0 and "listed" in r.stdout, r.stderr
        assert harmless(r), (r.stdout, r.stderr)
        session_id = r.stderr.split("session: ", 1)[1].split()[0]
        shown = managed(home, llm, "sessions", "show", session_id, "--events")
        assert shown.returncode == 0 and harmless(shown), (shown.stdout, shown.stderr)
        as_json = managed(home, llm, "sessions", "show", session_id, "--json", "--events")
        assert as_json.returncode == 0 and harmless(as_json), as_json.stderr  # JSON escapes them
        assert HOSTILE in _strings(json.loads(as_json.stdout))  # the tool's exact name
    finally:
        from praisonai._ledger import Ledger

        made = [e.instance_id for e in Ledger.default().entries()]
        subprocess.run([sys.executable, "-m", "praisonai", "compute", "stop", *made],
                       capture_output=True, timeout=120, check=False)  # fmt: skip


def test_stored_hosted_errors_and_sandbox_events_are_shown_harmless(home: Path, llm: ScriptedLLM) -> None:
    """What a hosted API or an instance wrote into a session's events: its error message, the
    instance ids of its sandbox events, a confirmation's deny message, an unknown tool's name."""
    with SqliteSessionStore() as store:
        agent = store.upsert_agent("local", "agent", {"schema": 1, "model": "gpt-4o-mini"})
        record, lease = store.create_session(agent, "someone@elsewhere:1", title="stored")
        events = (
            Event("session.error", {"error": {"type": HOSTILE, "message": HOSTILE}}),
            Event("sandbox.provisioned", {"provider": HOSTILE, "instance_id": HOSTILE}),
            Event(
                "sandbox.replaced",
                {"previous_instance_id": HOSTILE, "instance_id": HOSTILE, "lost": [HOSTILE]},
            ),
            Event(
                "agent.tool_result",
                {"tool_use_id": "elsewhere", "name": HOSTILE, "content": text_content("x")},
            ),
            Event("user.tool_confirmation", {"tool_use_id": "x", "result": "deny", "deny_message": HOSTILE}),
            Event("session.resumed", {"host": HOSTILE, "pid": 1, "lease_epoch": 1}),
            Event(HOSTILE, {"any": 1}),
        )
        store.update(lease, events=events, turn=1, status="idle", turns=1)
        store.release(lease)
    r = managed(home, llm, "sessions", "show", record.id, "--events")
    assert r.returncode == 0 and "pwned" in r.stdout + r.stderr, r.stderr
    assert harmless(r), (r.stdout, r.stderr)
