"""SSH-specific promises, against a real OpenSSH sshd on 127.0.0.1: host keys, authentication,
a host that dies mid-command or never answers, jump hosts, host pools, MaxSessions, secrets."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from kit import processes_running, processes_with, unique_marker, wait_until

from praisonai import _portal
from praisonai._errors import (
    AuthenticationError,
    ChannelClosedError,
    HostKeyError,
    PathOutsideWorkspaceError,
    ProviderUnavailableError,
)
from praisonai._ledger import Ledger
from praisonai.compute.providers.ssh import SSHCompute, SSHHost
from praisonai.compute.testing.sshd import SSHServer


@pytest.fixture
def made() -> Iterator[list[tuple[SSHCompute, str]]]:
    """Instances to remove after the test, whatever happens in it."""
    instances: list[tuple[SSHCompute, str]] = []
    yield instances
    for provider, instance_id in instances:
        _portal.call(provider.shutdown, instance_id)


def provision(provider: SSHCompute, made: list[tuple[SSHCompute, str]], config: object = None) -> str:
    instance_id = _portal.call(provider.provision, config).instance_id
    made.append((provider, instance_id))
    return instance_id


def _keygen(path: Path) -> Path:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)
    return path


# ---- host keys and authentication ---------------------------------------------------------------


def test_unknown_host_key_is_refused_under_the_strict_policy(sshd: SSHServer, tmp_path: Path) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    provider = SSHCompute(**sshd.connect_kwargs(known_hosts=str(empty)))
    with pytest.raises(HostKeyError, match=r"is not in .*trust_on_first_use"):
        _portal.call(provider.provision)


def test_changed_host_key_is_refused(sshd: SSHServer, tmp_path: Path) -> None:
    other = _keygen(tmp_path / "other_host_key")
    known = tmp_path / "known_hosts"
    known.write_text(f"[{sshd.host}]:{sshd.port} {' '.join(Path(f'{other}.pub').read_text().split()[:2])}\n")
    provider = SSHCompute(**sshd.connect_kwargs(known_hosts=str(known)))
    with pytest.raises(HostKeyError, match="does not match"):
        _portal.call(provider.provision)
    tofu = SSHCompute(**sshd.connect_kwargs(known_hosts=str(known), host_key_policy="trust_on_first_use"))
    with pytest.raises(HostKeyError, match="does not match"):  # first use is over: still refused
        _portal.call(tofu.provision)


def test_trust_on_first_use_records_the_key_for_strict_use_later(
    sshd: SSHServer, tmp_path: Path, made: list[tuple[SSHCompute, str]]
) -> None:
    known = tmp_path / "new" / "known_hosts"
    tofu = SSHCompute(**sshd.connect_kwargs(known_hosts=str(known), host_key_policy="trust_on_first_use"))
    provision(tofu, made)
    assert known.read_text().startswith(f"[{sshd.host}]:{sshd.port} ssh-ed25519 ")
    assert known.stat().st_mode & 0o077 == 0
    strict = SSHCompute(**sshd.connect_kwargs(known_hosts=str(known), port=sshd.port))
    assert _portal.call(strict.execute, made[0][1], "echo ok").stdout == "ok\n"


def test_wrong_user_or_key_is_a_clear_authentication_error(sshd: SSHServer, tmp_path: Path) -> None:
    stranger = SSHCompute(**sshd.connect_kwargs(user="praisonai-nobody"))
    with pytest.raises(AuthenticationError, match=r"'praisonai-nobody'.*tried: key"):
        _portal.call(stranger.provision)
    wrong_key = SSHCompute(**sshd.connect_kwargs(key_file=str(_keygen(tmp_path / "wrong"))))
    with pytest.raises(AuthenticationError, match="refused authentication"):
        _portal.call(wrong_key.provision)
    missing = SSHCompute(**sshd.connect_kwargs(key_file=str(tmp_path / "absent")))
    with pytest.raises(ValueError, match="does not exist"):
        _portal.call(missing.provision)


def test_a_password_is_used_only_when_given(
    home: Path, sshd: SSHServer, made: list[tuple[SSHCompute, str]]
) -> None:
    if sshd.password is None or Path.home().joinpath(".ssh").exists():
        pytest.skip("needs root (a user with a password) and no ~/.ssh keys of the test runner")
    by_password = SSHCompute(**sshd.connect_kwargs(key_file=None, use_agent=False, password=sshd.password))
    assert _portal.call(by_password.execute, provision(by_password, made), "echo in").stdout == "in\n"
    assert sshd.password not in repr(by_password.options.to_record())
    ledger_files = list(home.glob("ledger.sqlite3*"))  # the database, its WAL and shared memory
    assert ledger_files and not any(sshd.password.encode() in f.read_bytes() for f in ledger_files)
    without = SSHCompute(**sshd.connect_kwargs(key_file=None, use_agent=False))
    wrong = SSHCompute(**sshd.connect_kwargs(key_file=None, use_agent=False, password="wrong"))
    try:
        with pytest.raises(AuthenticationError, match="tried: nothing"):
            _portal.call(without.provision)
        with pytest.raises(AuthenticationError, match="tried: the password"):
            _portal.call(wrong.provision)
    finally:  # a refused provision cannot remove what it may have made: its row stays "failed"
        ledger = Ledger.default()  # forgotten here, or the home's reaper would retry it for good
        for entry in ledger.entries():
            if entry.state == "failed":
                ledger.forget(entry.instance_id)


# ---- hosts that fail ----------------------------------------------------------------------------


def test_a_host_that_never_answers_times_out_within_the_connect_timeout(sshd: SSHServer) -> None:
    with socket.socket() as silent:  # accepts TCP connections (backlog) but never says a word
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        provider = SSHCompute(**sshd.connect_kwargs(port=port, connect_timeout=1))
        started = time.monotonic()
        with pytest.raises(ProviderUnavailableError, match="within 1 s"):
            _portal.call(provider.provision)
        assert time.monotonic() - started < 2.5
    refused = SSHCompute(**sshd.connect_kwargs(port=port))  # nothing listens there now
    assert "cannot reach" in (refused.unavailable_reason() or "")


def test_sshd_killed_mid_command_fails_it_clearly_and_the_next_call_reconnects() -> None:
    with SSHServer() as server:
        provider = SSHCompute(**server.connect_kwargs())
        instance_id = _portal.call(provider.provision).instance_id
        try:

            async def killed_while_running() -> None:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(anyio.to_thread.run_sync, lambda: (time.sleep(0.5), server.kill()))
                    # the channel closed under the command, or, when the kill found the helper
                    # before its first reply, a new channel could not tell its fate: both honest
                    with pytest.raises(ChannelClosedError, match=r"closed|may have run"):
                        await provider.execute(instance_id, "sleep 30", timeout=20)

            _portal.call(killed_while_running)
            with pytest.raises(ProviderUnavailableError, match="cannot reach"):
                _portal.call(provider.execute, instance_id, "true")
            server.start()
            assert _portal.call(provider.execute, instance_id, "echo back").stdout == "back\n"
            _portal.call(provider.write_file, instance_id, "after.txt", "x")
            assert _portal.call(provider.read_file, instance_id, "after.txt") == b"x"
        finally:
            server.start() if server.process is None else None
            _portal.call(provider.shutdown, instance_id)


# ---- reaching and placing -----------------------------------------------------------------------


def test_jump_host(sshd: SSHServer, made: list[tuple[SSHCompute, str]]) -> None:
    bastion = SSHHost(**sshd.connect_kwargs())
    provider = SSHCompute(**sshd.connect_kwargs(jump=bastion, root="jumped"))
    instance_id = provision(provider, made)
    assert (
        _portal.call(provider.execute, instance_id, "pwd").stdout.strip().endswith(f"/jumped/{instance_id}")
    )


def test_a_pool_places_each_instance_on_the_least_busy_host(
    sshd: SSHServer, made: list[tuple[SSHCompute, str]]
) -> None:
    hosts = [sshd.connect_kwargs(root="pool-a"), sshd.connect_kwargs(root="pool-b")]
    provider = SSHCompute(hosts=hosts)
    places = {
        _portal.call(provider.get_status, provision(provider, made)).endpoint.split("/")[-2] for _ in range(2)
    }
    assert places == {"pool-a", "pool-b"}
    assert len(_portal.call(provider.list_instances)) == 2


def test_more_sessions_than_sshd_allows_on_one_connection(
    sshd: SSHServer, made: list[tuple[SSHCompute, str]]
) -> None:
    provider = SSHCompute(**sshd.connect_kwargs())
    instance_id = provision(provider, made)

    async def twelve_sessions() -> list[str]:  # sshd's MaxSessions is 10 per connection
        sessions = [await provider.open_session(instance_id) for _ in range(12)]
        try:
            return [(await s.run(f"echo {i}")).stdout for i, s in enumerate(sessions)]
        finally:
            for s in sessions:
                await s.close()

    assert _portal.call(twelve_sessions) == [f"{i}\n" for i in range(12)]


# ---- security -----------------------------------------------------------------------------------


def test_env_values_never_appear_on_a_command_line(
    sshd: SSHServer, made: list[tuple[SSHCompute, str]]
) -> None:
    secret = f"s3cret-{os.getpid()}"
    provider = SSHCompute(**sshd.connect_kwargs())
    instance_id = provision(provider, made, {"env": {"API_TOKEN": secret}})
    process = _portal.call(provider.processes.start, instance_id, 'sleep 30; echo "$API_TOKEN"')
    try:
        assert _portal.call(provider.execute, instance_id, 'echo "$API_TOKEN"').stdout == f"{secret}\n"
        assert processes_with(secret.encode()) == []
    finally:
        _portal.call(provider.processes.kill, instance_id, process.process_id)


def test_file_paths_outside_the_workspace_are_refused(
    sshd: SSHServer, made: list[tuple[SSHCompute, str]]
) -> None:
    provider = SSHCompute(**sshd.connect_kwargs())
    instance_id = provision(provider, made)
    for path in ("/etc/passwd", "../escape.txt", "/workspace/../etc/passwd"):
        with pytest.raises(PathOutsideWorkspaceError):
            _portal.call(provider.read_file, instance_id, path)
    with pytest.raises(PathOutsideWorkspaceError):
        _portal.call(provider.write_file, instance_id, "../escape.txt", "x")


def test_shutdown_kills_every_process_of_the_instance(
    sshd: SSHServer, made: list[tuple[SSHCompute, str]]
) -> None:
    provider = SSHCompute(**sshd.connect_kwargs())
    instance_id = provision(provider, made)
    marker = unique_marker()
    _portal.call(provider.execute, instance_id, f"setsid sleep {marker} >/dev/null 2>&1 &")
    _portal.call(provider.processes.start, instance_id, f"sleep {marker}")
    # the background process starts after start_process returns
    wait_until(lambda: len(processes_running(marker)) == 2, 5)
    assert _portal.call(provider.shutdown, instance_id) is True
    assert processes_running(marker) == []
    workspace = Path(sshd.home, ".praisonai", "instances", instance_id)
    assert (
        not workspace.exists()
        and not Path(sshd.home, ".praisonai", "instances", ".praisonai", instance_id).exists()
    )


# ---- configured from the environment, for the CLI -----------------------------------------------


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from praisonai.cli import main; main()", *args],
        capture_output=True, text=True, timeout=120, env={**os.environ, **env},
    )  # fmt: skip


def test_cli_runs_on_hosts_named_in_the_environment(sshd: SSHServer) -> None:
    env = {
        "PRAISONAI_SSH_HOSTS": f"{sshd.user}@{sshd.host}:{sshd.port}",
        "PRAISONAI_SSH_KEY": sshd.key_file,
        "PRAISONAI_SSH_KNOWN_HOSTS": sshd.known_hosts,
    }
    r = _cli(env, "sandbox", "run", "--compute", "ssh", "--", "sh", "-c", "echo on-ssh; exit 4")
    assert (r.returncode, r.stdout) == (4, "on-ssh\n"), r.stderr


def test_cli_without_hosts_says_how_to_configure_them() -> None:
    r = _cli({"PRAISONAI_SSH_HOSTS": ""}, "sandbox", "run", "--compute", "ssh", "--", "true")
    assert r.returncode != 0 and "PRAISONAI_SSH_HOSTS" in r.stderr and "Traceback" not in r.stderr


def test_ps_and_stop_see_an_instance_made_by_another_process(
    sshd: SSHServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PRAISONAI_HOME", str(tmp_path))  # a ledger of this test's own
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")  # only our instance
    made = subprocess.run(
        [sys.executable, "-c", "import sys, anyio\nfrom praisonai.compute.providers.ssh import SSHCompute\n"
         f"print(anyio.run(SSHCompute(**{sshd.connect_kwargs()!r}).provision).instance_id)"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    instance_id = made.stdout.strip()
    provider = SSHCompute(**sshd.connect_kwargs())
    try:
        listed = _cli({}, "compute", "ps", "--json")
        rows = {row["instance"]: row for row in json.loads(listed.stdout)}
        assert rows[instance_id]["provider"] == "ssh" and rows[instance_id]["status"] == "running", rows
        stopped = _cli({}, "compute", "stop", instance_id)
        assert stopped.returncode == 0 and "1 stopped" in stopped.stdout + stopped.stderr, stopped
        assert instance_id not in [i.instance_id for i in _portal.call(provider.list_instances)]
    finally:
        _portal.call(provider.shutdown, instance_id)
