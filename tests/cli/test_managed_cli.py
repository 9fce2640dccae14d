"""``praisonai managed`` as a user runs it: the real command in a child process, a real local (or
docker) instance, the model a scripted server on loopback driven by the real openai SDK (through
``OPENAI_BASE_URL``/``OPENAI_API_KEY``), and the store in a throwaway ``PRAISONAI_HOME``.

Each case asserts what is printed (stdout: the transcript or JSON; stderr: the session id first,
notes, errors) and the exit status that says how the turn ended.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from praisonai.cli.managed import outcome
from praisonai.cli.managed.transcript import JsonLines, Transcript
from praisonai.llm.testing import API_KEY, ScriptedLLM, reply, tool
from praisonai.managed.events import Event, delta, idle, text_content

Cli = Callable[..., subprocess.CompletedProcess[str]]
#: The Anthropic toolset with every tool asking for confirmation (a config the library takes).
ASK = [{"type": "agent_toolset_20260401", "default_config": {"permission_policy": {"type": "always_ask"}}}]


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        yield server


@pytest.fixture
def env(home: Path, llm: ScriptedLLM) -> Iterator[dict[str, str]]:
    """The child's environment: this test's home, the scripted model, no Anthropic key. Every
    instance the test's sessions made is stopped afterwards, by id (``compute stop --all`` would
    also stop other homes' containers)."""
    base = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "CLAUDE_API_KEY")}
    child = {
        **base,
        "PRAISONAI_HOME": str(home),
        "OPENAI_BASE_URL": f"{llm.url}/v1",
        "OPENAI_API_KEY": API_KEY,
    }
    yield child
    from praisonai._ledger import Ledger

    made = [e.instance_id for e in Ledger.default().entries()]
    if made:
        stopped = subprocess.run([sys.executable, "-m", "praisonai", "compute", "stop", *made], env=child,
                                 capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
        assert stopped.returncode == 0, stopped.stderr
    assert not list(Ledger.default().entries()), "an instance of the test outlived it"


@pytest.fixture
def cli(env: dict[str, str]) -> Cli:
    """``praisonai managed ARGS…`` in a child process (stdin not a terminal)."""

    def run(*args: str, extra: dict[str, str] | None = None, drop: tuple[str, ...] = ()) -> Any:
        child_env = {k: v for k, v in {**env, **(extra or {})}.items() if k not in drop}
        return subprocess.run(
            [sys.executable, "-m", "praisonai", "managed", *args],
            capture_output=True, text=True, timeout=180, env=child_env, stdin=subprocess.DEVNULL,
        )  # fmt: skip

    return run


def session_of(r: subprocess.CompletedProcess[str]) -> str:
    """The id a turn announces on the first line of stderr."""
    first = r.stderr.splitlines()[0] if r.stderr else ""
    assert first.startswith("session: msess_"), (r.returncode, r.stdout, r.stderr)
    return first.removeprefix("session: ")


def shown(cli: Cli, session_id: str, *flags: str) -> dict[str, Any]:
    r = cli("sessions", "show", session_id, "--json", *flags)
    assert r.returncode == 0, r.stderr
    data: dict[str, Any] = json.loads(r.stdout)
    return data


def one_clean_line(r: subprocess.CompletedProcess[str]) -> str:
    """The single line a user mistake gets on stderr (no traceback, nothing on stdout)."""
    assert "Traceback" not in r.stderr and r.stdout == "", (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    return lines[0]


# ---- a session's life ----------------------------------------------------------------------


def test_run_list_show_resume_delete(cli: Cli, llm: ScriptedLLM) -> None:
    llm.set_script([
        reply("Let me run it.", tool("execute_command", command="echo hello-from-tools"), chunks=2),
        reply("It said hello-from-tools.", chunks=3, input_tokens=30, output_tokens=7),
    ])  # fmt: skip
    r = cli("run", "say hello", "--compute", "local", "--model", "gpt-4o-mini", "--title", "greeting")
    sid = session_of(r)
    assert r.returncode == 0, r.stderr
    assert "$ echo hello-from-tools  [exit 0, " in r.stdout and "] hello-from-tools\n" in r.stdout
    assert r.stdout.startswith("Let me run it.\n") and r.stdout.endswith("It said hello-from-tools.\n")
    assert "usage: 40 input + 12 output tokens (cache: 0 read, 0 written), 2 requests" in r.stderr

    listed = cli("sessions", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    [row] = json.loads(listed.stdout)
    assert (row["id"], row["status"], row["stop_reason"], row["title"], row["turns"]) == (
        sid, "idle", "end_turn", "greeting", 1,
    )  # fmt: skip
    table = cli("sessions", "list")
    assert sid in table.stdout and "greeting" in table.stdout  # the id whole, to copy
    [agent] = json.loads(cli("agents", "list", "--json").stdout)
    assert (agent["name"], agent["version"], agent["model"], agent["id"]) == (
        "agent",
        1,
        "gpt-4o-mini",
        row["agent_id"],
    )

    card = cli("sessions", "show", sid, "--usage", "--events")
    assert card.returncode == 0, card.stderr
    lines = card.stdout.splitlines()
    assert "status   idle (end_turn)" in lines and "title    greeting" in lines
    assert any(line.startswith("agent    agent@1 (magt_") and "model gpt-4o-mini" in line for line in lines)
    assert "usage    40 input + 12 output tokens (cache: 0 read, 0 written), 2 requests" in lines
    assert any(line.startswith("sandbox  local local_") for line in lines)
    assert "> say hello" in lines and "-- end_turn" in lines
    assert any(line.startswith("$ echo hello-from-tools  [exit 0, ") for line in lines)

    llm.set_script([reply("Second answer.", chunks=2)])
    again = cli("sessions", "resume", sid, "and again")
    assert again.returncode == 0, again.stderr
    assert session_of(again) == sid and again.stdout == "Second answer.\n"
    data = shown(cli, sid, "--events")
    assert data["turns"] == 2 and data["usage"]["input_tokens"] == 50 and data["usage"]["requests"] == 3
    assert [(t["turn"], t["requests"], t["input_tokens"]) for t in data["usage_by_turn"]] == [
        (1, 2, 40),
        (2, 1, 10),
    ]
    prompts = [e["content"][0]["text"] for e in data["events"] if e["type"] == "user.message"]
    assert prompts == ["say hello", "and again"]

    refused = cli("sessions", "delete", sid)  # stdin is no terminal and --yes is missing
    assert refused.returncode == 2 and "without --yes" in one_clean_line(refused)
    assert shown(cli, sid)["id"] == sid  # nothing was deleted
    gone = cli("sessions", "delete", sid, "--yes")
    assert gone.returncode == 0, gone.stderr
    assert gone.stdout.strip(), "each step of the deletion is reported"
    for args in (("sessions", "show", sid), ("sessions", "resume", sid, "more")):
        after = cli(*args)
        assert after.returncode == 1 and sid in one_clean_line(after)


def test_json_lines_are_the_events_and_the_store_keeps_them(cli: Cli, llm: ScriptedLLM) -> None:
    llm.set_script([
        reply(tool("write_file", path="/workspace/a.txt", content="abc")),
        reply("Wrote it.", chunks=3, cache_read_tokens=4),
    ])  # fmt: skip
    r = cli("run", "write a.txt", "--compute", "local", "--json")
    assert r.returncode == 0, r.stderr
    sid = session_of(r)
    events = [json.loads(line) for line in r.stdout.splitlines()]
    types = [e["type"] for e in events]
    assert types[0] == "session.status_running" and types[-1] == "session.status_idle"
    assert events[-1]["stop_reason"] == {"type": "end_turn"}
    assert types.count("event_delta") == 3 and types.count("span.model_request_end") == 2
    use = next(e for e in events if e["type"] == "agent.tool_use")
    result = next(e for e in events if e["type"] == "agent.tool_result")
    assert use["name"] == "write_file" and result["tool_use_id"] == use["id"] and not result["is_error"]
    stored = shown(cli, sid, "--events")["events"]
    streamed = [e for e in events if e["type"] not in ("event_start", "event_delta")]
    assert [e["id"] for e in stored] == [e["id"] for e in streamed]
    assert shown(cli, sid)["usage"]["cache_read_input_tokens"] == 4


def test_no_stream_prints_the_message_whole(cli: Cli, llm: ScriptedLLM) -> None:
    llm.set_script([reply("All in one piece.", chunks=4)])
    r = cli("run", "hi", "--compute", "local", "--no-stream", "--json")
    assert r.returncode == 0, r.stderr
    types = [json.loads(line)["type"] for line in r.stdout.splitlines()]
    assert "event_delta" not in types and "agent.message" in types


# ---- approvals -----------------------------------------------------------------------------


@pytest.fixture
def pending(env: dict[str, str], llm: ScriptedLLM) -> Iterator[str]:
    """A session (made by the library, with tools that ask) left waiting to run ``echo approved``."""
    from praisonai.managed import LocalManagedConfig, ManagedAgent

    llm.set_script([reply(tool("execute_command", command="echo approved"))])
    config = LocalManagedConfig(model="gpt-4o-mini", tools=ASK)
    agent = ManagedAgent(compute="local", config=config, on_tool_confirmation=lambda request: None,
                         base_url=f"{llm.url}/v1", api_key=API_KEY)  # fmt: skip
    try:
        result = agent.run("run it")
    finally:
        agent.close()
    assert result.stop_reason == "requires_action"
    yield result.session_id


def test_a_pending_approval_is_shown_kept_without_a_terminal_and_answered(
    cli: Cli, llm: ScriptedLLM, pending: str
) -> None:
    card = cli("sessions", "show", pending)
    assert "status   requires_action (1 pending)" in card.stdout
    assert any(line.startswith("pending  $ echo approved  [levt_") for line in card.stdout.splitlines())

    kept = cli("sessions", "resume", pending)  # --approve ask, and no terminal to ask on
    assert kept.returncode == outcome.EXIT_REQUIRES_ACTION, kept.stderr
    assert "waiting for approval: $ echo approved" in kept.stderr
    assert f"praisonai managed sessions resume {pending} --approve allow|deny" in kept.stderr

    llm.set_script([reply("It printed approved.")])
    done = cli("sessions", "resume", pending, "--approve", "allow")
    assert done.returncode == 0, done.stderr
    # the use was made by the first process: its approval and result are lines of their own
    assert done.stdout.splitlines() == [
        "  (allowed)", "  execute_command [exit 0, " + done.stdout.split("[exit 0, ")[1].split("\n")[0],
        "It printed approved.",
    ]  # fmt: skip
    assert done.stdout.split("[exit 0, ")[1].split("\n")[0].endswith("s] approved")
    assert shown(cli, pending)["pending"] == []


def on_a_terminal(env: dict[str, str], args: tuple[str, ...], answer: str) -> tuple[int, str, str, str]:
    """``praisonai managed ARGS…`` with a terminal (a pty) as stdin: wait for its ``[y/N]``
    question on stderr, type ``answer``; returns the exit status, the question, stdout, stderr."""
    master, slave = os.openpty()
    child = subprocess.Popen(
        [sys.executable, "-m", "praisonai", "managed", *args],
        env=env, stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    os.close(slave)
    try:
        assert child.stderr is not None
        asked = ""
        while not asked.endswith(" [y/N] "):
            char = child.stderr.read(1)
            assert char, (asked, child.wait())
            asked += char
        os.write(master, answer.encode() + b"\n")
        out, err = child.communicate(timeout=60)
    finally:
        os.close(master)
        if child.poll() is None:
            child.kill()
            child.wait()
    return child.returncode, asked.splitlines()[-1], out, err


def test_ask_on_a_terminal_takes_the_answer_typed(
    env: dict[str, str], llm: ScriptedLLM, pending: str
) -> None:
    llm.set_script([reply("It printed approved.")])
    code, asked, out, err = on_a_terminal(env, ("sessions", "resume", pending), "y")
    assert code == 0, err
    assert asked == "allow $ echo approved? [y/N] "
    assert out.splitlines()[0] == "  (allowed)" and out.endswith("It printed approved.\n")


def test_delete_asks_on_a_terminal(env: dict[str, str], cli: Cli, pending: str) -> None:
    code, asked, out, err = on_a_terminal(env, ("sessions", "delete", pending), "n")
    assert (code, out, err.strip()) == (0, "", "nothing deleted")
    # the approval was asked before the tool ran: no instance was made for the session yet
    assert asked == f"delete {pending} (requires_action; no instance)? [y/N] "
    assert shown(cli, pending)["id"] == pending
    code, _, out, err = on_a_terminal(env, ("sessions", "delete", pending), "y")
    assert code == 0, err
    lease, instance, rows = out.splitlines()
    assert lease.startswith("lease: ") and instance == "instance: no instance recorded"
    assert rows.startswith("rows: removed the session, its ")
    assert cli("sessions", "show", pending).returncode == 1


def test_run_on_a_session_denies_with_approve_deny(cli: Cli, llm: ScriptedLLM, pending: str) -> None:
    llm.set_script([reply("Then I will not.")])  # the denial, then the prompt, in one request
    r = cli("run", "fine", "--session", pending, "--approve", "deny")
    assert r.returncode == 0, r.stderr
    assert session_of(r) == pending
    assert r.stdout.splitlines() == [
        "  (denied: denied by the user)",
        "  execute_command [error] Error: the use of execute_command was denied; do not retry it",
        "Then I will not.",
    ]
    prompts = [
        e["content"][0]["text"]
        for e in shown(cli, pending, "--events")["events"]
        if e["type"] == "user.message"
    ]
    assert prompts == ["run it", "fine"]


def test_a_session_held_by_a_live_process_is_busy(cli: Cli, pending: str) -> None:
    from praisonai.compute.lifecycle import owner_tag
    from praisonai.managed.store import SqliteSessionStore

    with SqliteSessionStore() as store:
        lease = store.acquire(pending, owner_tag())  # this test process: alive, on this host
        try:
            r = cli("sessions", "resume", pending, "--approve", "allow")
        finally:
            store.release(lease)
    assert r.returncode == outcome.EXIT_BUSY and "--force" in one_clean_line(r)


def test_force_takes_a_session_over_from_a_live_process(cli: Cli, llm: ScriptedLLM, pending: str) -> None:
    from praisonai._errors import StaleSessionError
    from praisonai.compute.lifecycle import owner_tag
    from praisonai.managed.store import SqliteSessionStore

    llm.set_script([reply("Taken over.")])
    with SqliteSessionStore() as store:
        lease = store.acquire(pending, owner_tag())
        r = cli("sessions", "resume", pending, "--approve", "allow", "--force")
        assert r.returncode == 0 and r.stdout.endswith("Taken over.\n"), r.stderr
        with pytest.raises(StaleSessionError):  # the old holder is fenced off
            store.update(lease, title="late write")


# ---- Ctrl-C ----------------------------------------------------------------------------------


def test_ctrl_c_interrupts_the_turn_kills_the_command_and_exits_130(
    env: dict[str, str], cli: Cli, llm: ScriptedLLM
) -> None:
    marker = f"sleep 37.{os.getpid()}"
    llm.set_script([reply(tool("execute_command", command=marker))])
    child = subprocess.Popen(
        [sys.executable, "-m", "praisonai", "managed", "run", "wait", "--compute", "local"],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not _running(marker):
            assert child.poll() is None and time.monotonic() < deadline, child.communicate()
            time.sleep(0.05)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 130, err
    assert not _running(marker), "the command's process outlived the interrupt"
    assert f"$ {marker}  [error] interrupted: the turn was stopped" in out
    assert "interrupted: the session is kept" in err
    sid = err.splitlines()[0].removeprefix("session: ")
    data = shown(cli, sid)
    assert data["status"] == "interrupted" and data["stop_reason"]["type"] == "interrupted"


def _running(marker: str) -> bool:
    return subprocess.run(["pgrep", "-f", marker], capture_output=True, check=False).returncode == 0


# ---- docker ----------------------------------------------------------------------------------


@pytest.mark.usefixtures("docker_ok")
def test_on_docker_the_session_instance_is_listed_and_deleted_with_it(cli: Cli, llm: ScriptedLLM) -> None:
    llm.set_script(
        [reply(tool("execute_command", command="cat /etc/os-release | head -1")), reply("Debian.")]
    )
    r = cli("run", "which os?", "--compute", "docker")
    assert r.returncode == 0, r.stderr
    sid = session_of(r)
    assert "[exit 0, " in r.stdout and r.stdout.endswith("Debian.\n")
    box = shown(cli, sid)["sandbox"]
    assert box["provider"] == "docker"
    listed = cli("ps", "--json")
    assert box["instance_id"] in {row["instance"] for row in json.loads(listed.stdout)}
    gone = cli("sessions", "delete", sid, "--yes")
    assert gone.returncode == 0, gone.stderr
    from praisonai.compute.providers.docker import container_name

    inspect = subprocess.run(["docker", "inspect", container_name(box["instance_id"])], capture_output=True)
    assert inspect.returncode != 0, "the session's container outlived its deletion"


# ---- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        (("sessions", "show", "msess_nope"), 1, "msess_nope"),
        (("sessions", "resume", "msess_nope", "hi"), 1, "msess_nope"),
        (("sessions", "show", "not-an-id"), 1, "not-an-id"),
        (("run", "hi", "--compute", "local", "--packages", "bogus:a"), 2, "bogus"),
        (("run", "hi", "--compute", "local", "--packages", "pip:a;rm"), 2, "a;rm"),
        (("run", "hi", "--approve", "maybe"), 2, "--approve takes ask, allow or deny"),
        (("run", "hi", "--provider", "anthropic"), 2, "ANTHROPIC_API_KEY"),
        (("run", "hi", "--compute", "nope"), 2, "unknown compute provider 'nope'"),
        (("run", "hi", "--session", "msess_x", "--model", "m"), 2, "--session continues a stored session"),
        (("sessions", "list", "--status", "sleeping"), 2, "unknown status 'sleeping'"),
        (("sessions", "list", "--agent", "nobody"), 1, "nobody"),
        (("sessions", "list", "--limit", "0"), 2, "limit must be at least 1"),
    ],
)
def test_user_mistakes_are_one_line(cli: Cli, args: tuple[str, ...], code: int, needle: str) -> None:
    r = cli(*args)
    assert r.returncode == code and needle in one_clean_line(r)


def test_no_api_key_names_the_variable_and_provisions_nothing(cli: Cli, home: Path) -> None:
    r = cli("run", "hi", "--compute", "local", drop=("OPENAI_API_KEY",))
    assert r.returncode == 2 and "OPENAI_API_KEY" in one_clean_line(r)
    from praisonai._ledger import Ledger

    assert not list(Ledger.default().entries())


def test_stop_needs_ids_or_all_as_compute_stop_does(cli: Cli) -> None:
    r = cli("stop")
    assert r.returncode == 2 and "name the instances to stop, or give --all" in r.stderr


def test_the_command_group_loads_no_library_before_a_command_runs() -> None:
    """Start-up: the group's modules import neither the managed library nor compute nor rich."""
    code = (
        "import sys; import praisonai.cli.managed; "
        "heavy = ('praisonai.managed', 'praisonai.compute', 'rich'); "
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout == "[]\n"


def test_empty_store_lists_nothing(cli: Cli) -> None:
    for args in (("sessions", "list", "--json"), ("agents", "list", "--json")):
        r = cli(*args)
        assert (r.returncode, json.loads(r.stdout)) == (0, [])


# ---- the renderer, on events made here ----------------------------------------------------


def test_a_tool_call_and_its_result_share_one_line() -> None:
    out, notes = io.StringIO(), io.StringIO()
    view = Transcript(out, notes)
    message = Event("agent.message", {"content": text_content("Looking.\n")})
    use = Event("agent.tool_use", {"name": "execute_command", "input": {"command": "ls\n-la"}})
    result = Event("agent.tool_result", {"tool_use_id": use.id, "content": text_content("a\nb\nc"),
                                         "is_error": False, "exit_code": 0, "duration_s": 0.25})  # fmt: skip
    for ev in (
        delta(message.id, "Look"),
        delta(message.id, "ing.\n"),
        message,
        use,
        result,
        idle("end_turn"),
    ):
        view.event(ev)
    view.finish("msess_x")
    assert out.getvalue() == "Looking.\n$ ls  (+1 more lines)  [exit 0, 0.25s] a  (+2 more lines)\n"
    assert view.outcome.exit_code() == outcome.EXIT_OK
    assert notes.getvalue() == "usage: 0 input + 0 output tokens (cache: 0 read, 0 written), 0 requests\n"


def test_terminal_control_characters_from_the_model_or_a_command_are_not_written() -> None:
    out = io.StringIO()
    view = Transcript(out, io.StringIO())
    use = Event("agent.tool_use", {"name": "execute_command", "input": {"command": "printf x"}})
    result = Event("agent.tool_result", {"tool_use_id": use.id, "content": text_content("\x1b]0;pwned\x07ok"),
                                         "is_error": False, "exit_code": 0})  # fmt: skip
    for ev in (delta("levt_m", "a\x1b[2Jb\r\n"), use, result):
        view.event(ev)
    assert "\x1b" not in out.getvalue() and "\x07" not in out.getvalue()
    assert out.getvalue() == "a\ufffd[2Jb\n$ printf x  [exit 0] \ufffd]0;pwned\ufffdok\n"


@pytest.mark.parametrize(
    ("events", "code"),
    [
        ([idle("requires_action", event_ids=["levt_1"])], outcome.EXIT_REQUIRES_ACTION),
        ([idle("budget_reached")], outcome.EXIT_LIMIT),
        ([idle("max_turns")], outcome.EXIT_LIMIT),
        ([idle("refusal")], outcome.EXIT_REFUSAL),
        ([idle("retries_exhausted")], outcome.EXIT_ERROR),
        ([Event("user.interrupt"), idle("interrupted")], outcome.EXIT_INTERRUPTED),
        (
            [
                Event("session.error", {"error": {"message": "x", "retry_status": {"type": "terminal"}}}),
                idle("end_turn"),
            ],
            outcome.EXIT_ERROR,
        ),
        ([], outcome.EXIT_ERROR),  # no end recorded: never 0
        ([idle("something_new")], outcome.EXIT_ERROR),
    ],
)
def test_each_way_a_turn_ends_has_its_exit_status(events: list[Event], code: int) -> None:
    view = JsonLines(io.StringIO())
    for ev in events:
        view.event(ev)
    assert view.outcome.exit_code() == code
    assert [json.loads(line)["type"] for line in view.out.getvalue().splitlines()] == [e.type for e in events]  # type: ignore[attr-defined]


def test_ask_leaves_the_call_pending_without_a_terminal_then_resume_approves_it(
    cli: Cli, llm: ScriptedLLM
) -> None:
    llm.set_script([reply(tool("execute_command", command="echo approved-run")), reply("done")])
    r = cli("run", "go", "--compute", "local", "--ask")
    sid = session_of(r)
    assert r.returncode == outcome.EXIT_REQUIRES_ACTION, r.stderr
    assert shown(cli, sid)["pending"], "the call waits for approval"
    resumed = cli("sessions", "resume", sid, "--approve", "allow")
    assert resumed.returncode == 0, resumed.stderr
    assert "approved-run" in resumed.stdout and resumed.stdout.endswith("done\n")


def test_max_turns_and_budget_end_the_turn_with_their_exit_code(cli: Cli, llm: ScriptedLLM) -> None:
    llm.set_script(lambda path, body: reply(tool("list_files"), input_tokens=600, output_tokens=10))
    r = cli("run", "loop", "--compute", "local", "--max-turns", "2")
    assert r.returncode == outcome.EXIT_LIMIT, r.stderr
    assert len(llm.requests) == 2
    r = cli("run", "loop", "--compute", "local", "--budget-tokens", "1000")
    assert r.returncode == outcome.EXIT_LIMIT, r.stderr
    assert len(llm.requests) == 4  # two more: the second pushed the session past its budget
