"""``ssh://`` hosts in a docker pool: the engine reached through an OpenSSH socket forward.

A real sshd on 127.0.0.1 (``SSHServer``, its user in the ``docker`` group) forwards to one of the
pool test engines (``test_docker_pool.running_engines``); the client is this machine's ``ssh``,
configured by an ssh_config file of the test's own (key, known_hosts). Skipped with the reason
where the engines or sshd cannot run, unless CI requires them.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest
from test_docker_pool import IMAGE, running_engines

from praisonai import _portal
from praisonai._errors import ConfigError, ProviderUnavailableError
from praisonai._types import InstanceStatus
from praisonai.compute.lifecycle import LABEL_PROVIDER
from praisonai.compute.providers.docker import DockerCompute, DockerHost
from praisonai.compute.providers.docker._client import remove_container
from praisonai.compute.testing.sshd import SSHServer, sshd_reason

# It uses the pool's engines, which test_docker_pool counts and kills one of.
pytestmark = pytest.mark.alone

MARK = "StreamLocalBindUnlink"  # in every forward's command line, and in no other ssh's


@pytest.mark.parametrize(
    ("url", "remote"),
    [
        ("ssh://-oProxyCommand=touch@example", None),
        ("ssh://user@-oProxyCommand=x", None),
        ("ssh://user@host -p 1", None),
        ("ssh://user@host:99999", None),
        ("ssh://user@host", "/run/a:b.sock"),
        ("ssh://user@host", "relative.sock"),
    ],
)
def test_what_ssh_could_misread_is_refused(url: str, remote: str | None) -> None:
    with pytest.raises(ConfigError) as refused:
        DockerCompute(hosts=[DockerHost(url=url, socket=remote)])
    assert "\n" not in str(refused.value)
    if remote is None:  # one engine at an ssh:// base_url goes through the same forward and checks
        with pytest.raises(ConfigError, match="not ssh://"):
            _ = DockerCompute(base_url=url).api
    with pytest.raises(ConfigError, match="ssh:// engines only"):
        DockerCompute(hosts=[DockerHost(url="unix:///run/docker.sock", socket="/x.sock")])


@pytest.fixture(scope="module")
def engines() -> Iterator[Path]:
    for where in running_engines():
        where.chmod(where.stat().st_mode | 0o011)  # the ssh user reaches the sockets through it
        yield where


@pytest.fixture(scope="module")
def server(skip_unless_required: Callable[[str, str | None], None]) -> Iterator[SSHServer]:
    """An sshd whose user may use the engines' sockets (group ``docker``)."""
    skip_unless_required("ssh", sshd_reason())
    with SSHServer(groups=("docker",)) as server:
        yield server


def _config(server: SSHServer, key_file: str, name: str) -> str:
    path = server.dir / name
    path.write_text(
        f"Host {server.host}\n  IdentityFile {key_file}\n  IdentitiesOnly yes\n"
        f"  UserKnownHostsFile {server.known_hosts}\n  StrictHostKeyChecking yes\n  LogLevel ERROR\n"
    )
    return str(path)


def _ssh_host(server: SSHServer, engines: Path, key_file: str | None = None) -> DockerHost:
    config = _config(server, key_file or server.key_file, "ssh_config" if key_file is None else "other")
    url = f"ssh://{server.user}@{server.host}:{server.port}"
    return DockerHost(url=url, socket=f"{engines}/d2/docker.sock", ssh_config=config)


def _forwards(server: SSHServer) -> list[int]:
    """The live ssh forwards to ``server`` on this machine (a killed one is gone or a zombie).
    ``-ww``: ps cuts lines at ``$COLUMNS`` otherwise, even into a pipe."""
    rows = subprocess.run(["ps", "-ww", "-eo", "pid=,stat=,args="], capture_output=True, text=True).stdout
    return [
        int(pid)
        for pid, stat, args in (row.split(None, 2) for row in rows.splitlines() if row.count(" ") >= 2)
        if MARK in args and f"-p {server.port} " in args and not stat.startswith("Z")
    ]


def _remote_sessions(server: SSHServer) -> list[str]:
    """The forwards' remote ``sleep`` processes (the sshd host is this machine)."""
    found = subprocess.run(["pgrep", "-u", server.user, "-f", "sleep 2147483647"], capture_output=True)
    return found.stdout.decode().split()


@pytest.fixture
def hosts(server: SSHServer, engines: Path) -> Iterator[list[DockerHost]]:
    """A unix host (d1) and an ssh host (d2 through the sshd); whatever is left on them
    afterwards is removed, and no forward may outlive the test."""
    yield [DockerHost(url=f"unix://{engines}/d1/docker.sock"), _ssh_host(server, engines)]
    for i in (1, 2):
        api = DockerCompute(base_url=f"unix://{engines}/d{i}/docker.sock").api
        for row in api.containers(all=True, filters={"label": f"{LABEL_PROVIDER}=docker"}):
            remove_container(api, row["Id"])  # gone meanwhile, or being removed: waited for
    assert _forwards(server) == []


def _provision(pool: DockerCompute, n: int) -> dict[str, str]:
    """Host url -> instance id, for ``n`` instances provisioned one after another."""
    made = [_portal.call(pool.provision) for _ in range(n)]
    return {info.metadata["host"]: info.instance_id for info in made}


def test_a_pool_places_on_a_unix_and_an_ssh_host(hosts: list[DockerHost], tmp_path: Path) -> None:
    pool = DockerCompute(hosts=hosts, image=IMAGE)
    try:
        assert pool.unavailable_reason() is None
        made = _provision(pool, 2)
        assert sorted(made) == sorted(h.url for h in hosts)
        remote = made[hosts[1].url]
        result = _portal.call(pool.execute, remote, "echo out; echo err >&2; exit 3")
        assert (result.stdout, result.stderr, result.exit_code) == ("out\n", "err\n", 3)
        _portal.call(pool.write_file, remote, "/tmp/a.bin", bytes(range(256)) * 64)
        assert _portal.call(pool.read_file, remote, "/tmp/a.bin") == bytes(range(256)) * 64
        (tmp_path / "up").mkdir()
        (tmp_path / "up" / "f.txt").write_text("through the forward")
        _portal.call(pool.upload_file, remote, tmp_path / "up", "/tmp/up")
        _portal.call(pool.download_file, remote, "/tmp/up", tmp_path / "down")
        assert (tmp_path / "down" / "f.txt").read_text() == "through the forward"
        rebuilt = DockerCompute.from_options(pool.options)  # the ssh settings are in its options
        listed = {i.instance_id: i for i in _portal.call(rebuilt.list_instances)}
        assert listed[remote].status is InstanceStatus.RUNNING
        assert listed[remote].metadata["host"] == hosts[1].url
        assert _portal.call(rebuilt.shutdown, remote) and _portal.call(pool.shutdown, made[hosts[0].url])
        assert not {i.instance_id for i in _portal.call(pool.list_instances)} & set(made.values())
        rebuilt.close()
    finally:
        pool.close()


def test_many_round_trips_through_the_forward_do_not_deadlock(hosts: list[DockerHost]) -> None:
    """docker-py's own ssh transport reads whole buffers and hangs the helper's request/response
    traffic; the forward is a plain socket."""
    pool = DockerCompute(hosts=hosts[1:], image=IMAGE)
    try:
        instance = _portal.call(pool.provision).instance_id

        async def chatty() -> list[str]:
            with anyio.fail_after(120):
                out = [(await pool.execute(instance, f"echo {i}")).stdout for i in range(300)]
                await pool.write_file(instance, "/tmp/big", b"x" * (1 << 20))
                out.append(str(len(await pool.read_file(instance, "/tmp/big"))))
                return out

        assert _portal.call(chatty) == [f"{i}\n" for i in range(300)] + [str(1 << 20)]
        assert _portal.call(pool.shutdown, instance)
    finally:
        pool.close()


def test_a_refused_login_is_reported_per_instance_in_one_sentence(
    hosts: list[DockerHost], server: SSHServer, engines: Path
) -> None:
    pool = DockerCompute(hosts=hosts, image=IMAGE)
    made = _provision(pool, 2)
    stranger = str(server.dir / "stranger_key")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", stranger], check=True)
    refused = DockerCompute(hosts=[hosts[0], _ssh_host(server, engines, stranger)], image=IMAGE)
    try:
        with pytest.raises(ProviderUnavailableError) as caught:
            _portal.call(refused.get_status, made[hosts[1].url])
        message = str(caught.value)
        assert hosts[1].url in message and "Permission denied (publickey" in message
        assert "\n" not in message
        assert _portal.call(refused.execute, made[hosts[0].url], "echo ok").stdout == "ok\n"
        # a forward to a socket the remote user cannot open: refused in one sentence too
        gone = DockerCompute(hosts=[DockerHost(url=hosts[1].url, socket="/nonexistent.sock",
                                               ssh_config=hosts[1].ssh_config)], image=IMAGE)  # fmt: skip
        reason = gone.unavailable_reason() or ""
        assert hosts[1].url in reason and "refused" in reason and "\n" not in reason
    finally:
        for instance in made.values():
            _portal.call(pool.shutdown, instance)
        pool.close()
        refused.close()


def test_an_unreachable_ssh_host_leaves_the_others_working(hosts: list[DockerHost]) -> None:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]  # nothing listens there once closed
    nowhere = DockerHost(url=f"ssh://nobody@127.0.0.1:{port}", ssh_config=hosts[1].ssh_config)
    pool = DockerCompute(hosts=[hosts[0], nowhere], image=IMAGE)
    try:
        assert pool.unavailable_reason() is None
        info = _portal.call(pool.provision)
        assert info.metadata["host"] == hosts[0].url
        assert _portal.call(pool.execute, info.instance_id, "echo ok").stdout == "ok\n"
        with pytest.raises(ProviderUnavailableError, match="Connection refused") as caught:
            _portal.call(DockerCompute(hosts=[nowhere], image=IMAGE).provision)
        assert nowhere.url in str(caught.value) and "\n" not in str(caught.value)
        assert _portal.call(pool.shutdown, info.instance_id)
    finally:
        pool.close()


def test_a_killed_forward_is_started_again(hosts: list[DockerHost], server: SSHServer) -> None:
    pool = DockerCompute(hosts=hosts[1:], image=IMAGE)
    try:
        instance = _portal.call(pool.provision).instance_id
        assert _portal.call(pool.execute, instance, "echo one").stdout == "one\n"
        [first] = _forwards(server)
        os.kill(first, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while _forwards(server) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _portal.call(pool.execute, instance, "echo two").stdout == "two\n"
        [second] = _forwards(server)
        assert second != first
        # the killed forward's remote session ended with it (its pty hung up)
        while len(_remote_sessions(server)) > 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(_remote_sessions(server)) == 1
        assert _portal.call(pool.shutdown, instance)
    finally:
        pool.close()
    assert _forwards(server) == []


def test_a_host_that_keeps_no_session_gets_a_plain_forward(engines: Path) -> None:
    """A forced command ends the pty session the forward rides on: ``ssh -N`` then."""
    with SSHServer(groups=("docker",), sshd_args=("-o", "ForceCommand=/bin/true")) as forced:
        pool = DockerCompute(hosts=[_ssh_host(forced, engines)], image=IMAGE)
        try:
            instance = _portal.call(pool.provision).instance_id
            assert _portal.call(pool.execute, instance, "echo ok").stdout == "ok\n"
            [pid] = _forwards(forced)
            assert " -nNT " in Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            assert _portal.call(pool.shutdown, instance)
        finally:
            pool.close()
        assert _forwards(forced) == []


def test_no_forward_outlives_its_process(hosts: list[DockerHost], server: SSHServer) -> None:
    """A process that never closes its pool still stops its forwards when it exits."""
    body = (
        "import sys\n"
        "from praisonai import _portal\n"
        "from praisonai.compute.providers.docker import DockerCompute, DockerHost\n"
        "pool = DockerCompute(hosts=[DockerHost.model_validate_json(sys.argv[1])], image=sys.argv[2])\n"
        "instance = _portal.call(pool.provision).instance_id\n"
        "print(_portal.call(pool.execute, instance, 'echo ok').stdout, end='')\n"
        "_portal.call(pool.shutdown, instance)\n"
    )
    child = subprocess.run(
        [sys.executable, "-c", body, hosts[1].model_dump_json(), IMAGE],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert (child.returncode, child.stdout) == (0, "ok\n"), child.stderr
    assert _forwards(server) == []


def test_no_forward_outlives_a_killed_process(hosts: list[DockerHost], server: SSHServer) -> None:
    """SIGKILL runs no exit handler: the kernel ends the forward with its process."""
    body = (
        "import os, signal, sys\n"
        "from praisonai import _portal\n"
        "from praisonai.compute.providers.docker import DockerCompute, DockerHost\n"
        "pool = DockerCompute(hosts=[DockerHost.model_validate_json(sys.argv[1])], image=sys.argv[2])\n"
        "_portal.call(pool.list_instances)\n"
        "print('up', flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    # its tunnel's private directory outlives it (no exit handler ran): made in one removed here
    with tempfile.TemporaryDirectory(prefix="pxs-") as scratch:
        child = subprocess.run(
            [sys.executable, "-c", body, hosts[1].model_dump_json(), IMAGE],
            capture_output=True, text=True, timeout=120, env={**os.environ, "TMPDIR": scratch},
        )  # fmt: skip
    assert (child.returncode, child.stdout) == (-signal.SIGKILL, "up\n"), child.stderr
    deadline = time.monotonic() + 10
    while _forwards(server) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _forwards(server) == []
