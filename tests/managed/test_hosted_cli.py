"""``praisonai managed`` over the hosted resources, as a user runs it: the real command in a child
process whose ``ANTHROPIC_BASE_URL`` is the Managed Agents fake (the real ``anthropic`` client on
loopback), the store in a throwaway ``PRAISONAI_HOME``. ``agents list --remote|show|update|archive``,
``envs list|show|delete``, ``sessions list --remote``, ``sessions show`` and ``sessions delete`` of a
hosted session, and the one-line errors (no key, refused key, beta not enabled, rate limit, no API).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from anthropic import Anthropic
from fakes.managed_agents import API_KEY, ManagedAgentsFake

from praisonai.compute.lifecycle import owner_tag
from praisonai.managed.store import SqliteSessionStore

Cli = Callable[..., subprocess.CompletedProcess[str]]
MODEL = "claude-sonnet-4-6"


@pytest.fixture
def client(fake: ManagedAgentsFake) -> Iterator[Anthropic]:
    """The test's own client on the fake, to make and inspect what the commands act on."""
    with Anthropic(base_url=fake.url, api_key=API_KEY, max_retries=0, timeout=30) as c:
        yield c


@pytest.fixture
def cli(home: Path, fake: ManagedAgentsFake) -> Cli:
    """``praisonai managed ARGS…`` in a child process pointed at the fake (stdin not a terminal)."""
    base = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "CLAUDE_API_KEY")}
    # COLUMNS: wide enough that no table cell is cut
    env = {**base, "PRAISONAI_HOME": str(home), "ANTHROPIC_API_KEY": API_KEY, "ANTHROPIC_BASE_URL": fake.url,
           "COLUMNS": "200"}  # fmt: skip

    def run(*args: str, extra: dict[str, str] | None = None, drop: tuple[str, ...] = ()) -> Any:
        child = {k: v for k, v in {**env, **(extra or {})}.items() if k not in drop}
        return subprocess.run([sys.executable, "-m", "praisonai", "managed", *args], capture_output=True,
                              text=True, timeout=120, env=child, stdin=subprocess.DEVNULL)  # fmt: skip

    return run


def ok(r: subprocess.CompletedProcess[str]) -> str:
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    return r.stdout


def as_json(r: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(ok(r))


def one_error(r: subprocess.CompletedProcess[str], code: int = 1) -> str:
    """The one line a failed command prints on stderr (no traceback), after checking its status."""
    lines = r.stderr.splitlines()
    assert r.returncode == code and len(lines) == 1 and lines[0].startswith("error: "), (
        r.returncode, r.stdout, r.stderr,
    )  # fmt: skip
    return lines[0]


def hosted_session(c: Anthropic, remote: dict[str, Any] | None = None) -> tuple[str, str]:
    """A hosted session as the hosted backend leaves it: a remote session tagged with the local
    id, and a local record naming it (with ``remote``, its remote details). Returns both ids."""
    agent = c.beta.agents.create(name="coder", model=MODEL)
    env = c.beta.environments.create(name=f"env-{os.urandom(4).hex()}")
    with SqliteSessionStore() as store:
        record, lease = store.create_session(store.upsert_agent("anthropic", "coder", {"model": MODEL}),
                                             owner_tag(), title="t")  # fmt: skip
        sesn = c.beta.sessions.create(
            agent={"type": "agent", "id": agent.id, "version": agent.version},
            environment_id=env.id,
            metadata={"praisonai_session": record.id},
        )
        details = remote or {"agent": {"id": agent.id, "version": 1}, "environment_id": env.id}
        store.update(lease, remote_session_id=sesn.id, remote=details)
        store.release(lease)
    return record.id, sesn.id


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# ---- agents -------------------------------------------------------------------------------------


def test_agents_list_show_update_and_archive(cli: Cli, client: Anthropic) -> None:
    agent = client.beta.agents.create(name="coder", model=MODEL, system="be brief\nand exact")
    table = ok(cli("agents", "list", "--remote"))
    assert agent.id in table and "coder" in table and MODEL in table
    assert [a["id"] for a in as_json(cli("agents", "list", "--remote", "--json"))] == [agent.id]
    card = ok(cli("agents", "show", agent.id))
    assert f"{agent.id} (coder), version 1" in card and f"model    {MODEL}" in card
    assert "be brief  (+1 more lines)" in card

    assert ok(cli("agents", "update", agent.id, "--version", "1", "--system", "v2")) == (
        f"updated {agent.id}: version 2 (was 1)\n"
    )
    assert client.beta.agents.retrieve(agent.id).system == "v2"
    stale = cli("agents", "update", agent.id, "--version", "1", "--name", "other")
    assert f"agent {agent.id} changed since version 1; show it" in one_error(stale)
    assert client.beta.agents.retrieve(agent.id).version == 2  # nothing changed
    first = as_json(cli("agents", "show", agent.id, "--version", "1", "--json"))
    assert (first["version"], first["system"]) == (1, "be brief\nand exact")
    one_error(cli("agents", "update", agent.id, "--version", "2"), code=2)  # nothing to update

    assert ok(cli("agents", "archive", agent.id)) == f"archived {agent.id} (coder, version 2)\n"
    assert agent.id not in ok(cli("agents", "list", "--remote"))
    listed = as_json(cli("agents", "list", "--remote", "--include-archived", "--json"))
    assert [a["id"] for a in listed] == [agent.id] and listed[0]["archived_at"]
    assert "not found" in one_error(cli("agents", "show", "agent_nope"))


def test_a_listing_walks_the_api_pages(cli: Cli, client: Anthropic) -> None:
    with ThreadPoolExecutor(8) as pool:  # made side by side: each answer of the fake takes a while
        made = set(pool.map(lambda i: client.beta.agents.create(name=f"a{i}", model=MODEL).id, range(101)))
    listed = [a["id"] for a in as_json(cli("agents", "list", "--remote", "--json"))]  # pages hold 100
    assert len(listed) == 101 and set(listed) == made


# ---- environments -------------------------------------------------------------------------------


def test_envs_list_show_and_delete_twice(cli: Cli, client: Anthropic) -> None:
    env = client.beta.environments.create(
        name="praisonai-env",
        config={"type": "cloud", "packages": {"pip": ["rich"]}, "networking": {
            "type": "limited", "allowed_hosts": ["pypi.org"], "allow_package_managers": True}},
    )  # fmt: skip
    table = ok(cli("envs", "list"))
    assert env.id in table and "praisonai-env" in table and "limited" in table and "pip: rich" in table
    card = ok(cli("envs", "show", env.id))
    assert "network  limited: pypi.org" in card and "packages pip: rich" in card
    shown = as_json(cli("envs", "show", env.id, "--json"))
    assert shown["config"]["networking"]["allowed_hosts"] == ["pypi.org"]

    assert ok(cli("envs", "delete", env.id)) == f"deleted {env.id}\n"
    assert ok(cli("envs", "delete", env.id)) == f"{env.id} was already gone\n"  # a 404 is done
    again = as_json(cli("envs", "delete", env.id, "--json"))
    assert again == {"id": env.id, "deleted": True, "existed": False}
    assert as_json(cli("envs", "list", "--json")) == []
    assert f"environment {env.id}: not found" in one_error(cli("envs", "show", env.id))


# ---- sessions -----------------------------------------------------------------------------------


def test_sessions_list_remote_flags_the_sessions_with_no_local_record(
    cli: Cli, client: Anthropic, fake: ManagedAgentsFake
) -> None:
    local_id, tracked = hosted_session(client)
    agent = client.beta.agents.create(name="elsewhere", model=MODEL)
    untracked = client.beta.sessions.create(agent=agent.id, environment_id=fake.environments()[0]["id"])

    offline = ok(cli("sessions", "list", extra={"ANTHROPIC_BASE_URL": f"http://127.0.0.1:{closed_port()}"}))
    assert local_id in offline and untracked.id not in offline  # the store alone: no API asked
    r = cli("sessions", "list", "--remote")
    table = ok(r)
    assert f"{tracked} (idle)" in table and local_id in table
    row = next(line for line in table.splitlines() if untracked.id in line)
    assert "elsewhere@1" in row and "no local record" in row
    assert "1 remote session(s) with no local record" in r.stderr
    rows = as_json(cli("sessions", "list", "--remote", "--json"))
    assert [(x["id"], x["local"], x["remote_session_id"]) for x in rows] == [
        (local_id, True, tracked), (None, False, untracked.id)
    ]  # fmt: skip
    assert rows[0]["remote_status"] == "idle" and rows[1]["updated_at"].endswith("Z")  # ISO 8601, UTC
    assert as_json(cli("sessions", "list", "--remote", "--status", "running", "--json")) == []


def test_a_session_tracked_beyond_the_listed_page_is_not_flagged(cli: Cli, client: Anthropic) -> None:
    older, older_remote = hosted_session(client)
    _, newer_remote = hosted_session(client)  # the newest remote session
    with SqliteSessionStore() as store:  # the older one is the most recently active locally
        lease = store.acquire(older, owner_tag())
        store.update(lease, title="touched")
        store.release(lease)
    rows = as_json(cli("sessions", "list", "--remote", "-l", "1", "--json"))
    assert [(x["id"], x["remote_session_id"], x["remote_status"]) for x in rows] == [
        (older, older_remote, None)  # its remote session is not on the API's first page
    ]  # newer_remote is listed by the API but recorded by `newer`: not flagged
    assert newer_remote not in ok(cli("sessions", "list", "--remote", "-l", "1"))


def test_sessions_show_gives_the_remote_session_and_what_the_api_billed(cli: Cli, client: Anthropic) -> None:
    usage = {"input_tokens": 120, "output_tokens": 30, "cache_read_input_tokens": 50,
             "cache_creation": {"ephemeral_5m_input_tokens": 100, "ephemeral_1h_input_tokens": 0},
             "list_cost": {"amount": "42", "currency": "USD"}, "active_seconds": 12.5}  # fmt: skip
    remote = {"agent": {"id": "agent_x", "version": 3}, "environment_id": "env_y", "status": "idle",
              "usage": usage, "stats": {"active_seconds": 12.5, "duration_seconds": 40.0}}  # fmt: skip
    local_id, sesn = hosted_session(client, remote)
    card = ok(cli("sessions", "show", local_id))
    assert f"session  {local_id} (remote {sesn})" in card
    assert "remote   agent agent_x@3, environment env_y, idle" in card
    assert "billed   cache written 100 for 5m, 0 for 1h; list cost 0.42 USD; 12.5 s active" in card
    shown = as_json(cli("sessions", "show", local_id, "--json"))
    assert shown["remote_session_id"] == sesn and shown["remote"]["usage"]["list_cost"]["amount"] == "42"


def test_delete_removes_the_remote_session_then_the_rows_and_is_idempotent(
    cli: Cli, client: Anthropic, fake: ManagedAgentsFake
) -> None:
    local_id, sesn = hosted_session(client)
    out = ok(cli("sessions", "delete", local_id, "--yes"))
    assert [line.split(":")[0] for line in out.splitlines()] == ["lease", "remote", "instance", "rows"]
    assert f"remote: deleted {sesn}" in out
    assert sesn not in fake.session_ids()
    assert f"no session {local_id}" in one_error(cli("sessions", "delete", local_id, "--yes"))

    local_id, sesn = hosted_session(client)
    client.beta.sessions.delete(sesn)  # gone on the API already: a 404 counts as done
    report = as_json(cli("sessions", "delete", local_id, "--yes", "--json"))
    gone = {"name": "remote", "ok": True, "detail": f"{sesn} was already gone"}
    assert report["ok"] and report["steps"][1] == gone


def test_delete_archive_and_a_failed_remote_step_keeps_the_rows(
    cli: Cli, client: Anthropic, fake: ManagedAgentsFake
) -> None:
    local_id, sesn = hosted_session(client)
    fake.fail(403, on="sessions.archive")  # not one the SDK retries
    failed = cli("sessions", "delete", local_id, "--yes", "--archive")
    assert failed.returncode == 1 and "lease: took the lease" in failed.stdout
    assert "error: remote: archiving session" in failed.stderr and "beta enabled" in failed.stderr
    assert "error: rows: kept" in failed.stderr
    assert ok(cli("sessions", "show", local_id))  # still there, to retry with
    assert fake.session(sesn)["archived_at"] is None

    assert f"remote: archived {sesn}" in ok(cli("sessions", "delete", local_id, "--yes", "--archive"))
    assert fake.session(sesn)["archived_at"] is not None  # kept on the API, read-only
    assert f"no session {local_id}" in one_error(cli("sessions", "show", local_id))

    no_key, kept = hosted_session(client)
    r = cli("sessions", "delete", no_key, "--yes", drop=("ANTHROPIC_API_KEY",))
    assert r.returncode == 1 and "error: remote: " in r.stderr and "ANTHROPIC_API_KEY" in r.stderr
    assert "error: rows: kept, so that the session still names its remote session" in r.stderr
    out = ok(cli("sessions", "delete", no_key, "--yes", "--keep-remote", drop=("ANTHROPIC_API_KEY",)))
    assert f"remote: left {kept} as it is" in out and kept in fake.session_ids()


# ---- errors -------------------------------------------------------------------------------------


LIMITED = "is rate limiting this key (429: injected by the fake); it asks to retry after 7 s: try again at"


@pytest.mark.parametrize(
    ("status", "route", "args", "said"),
    [
        (401, "agents.list", ("agents", "list", "--remote"), "Anthropic refused the API key"),
        (403, "environments.list", ("envs", "list"), "is the managed-agents beta enabled"),
        (429, "sessions.list", ("sessions", "list", "--remote"), LIMITED),
        (429, "agents.retrieve", ("agents", "show", "agent_x"), LIMITED),
        (403, "environments.delete", ("envs", "delete", "env_x"), "is the managed-agents beta enabled"),
    ],
)
def test_an_api_refusal_is_one_line(
    cli: Cli, fake: ManagedAgentsFake, status: int, route: str, args: tuple[str, ...], said: str
) -> None:
    fake.fail(status, on=route, retry_after="7" if status == 429 else None)
    assert said in one_error(cli(*args))
    assert len(fake.calls(route)) == 1  # said at once, not retried (nor slept through)


def test_no_key_and_no_api_are_one_line(cli: Cli) -> None:
    missing = cli("agents", "list", "--remote", drop=("ANTHROPIC_API_KEY",))
    assert "set ANTHROPIC_API_KEY" in one_error(missing, code=2)
    gone = cli("envs", "list", extra={"ANTHROPIC_BASE_URL": f"http://127.0.0.1:{closed_port()}"})
    assert "listing the environments: the Anthropic API at http://127.0.0.1:" in one_error(gone)
    assert "did not answer" in one_error(gone)
