"""SSH hosts as they are (issue 43, item 5), against the real test sshd: login shells with noisy,
slow or stdin-reading rc files and shells that run nothing, a full remote disk, links the remote
side plants in the way of writes, uploads and downloads, and a tunnelled connection whose carrier
fails. The odd shells are the shared sshd's user's own for the length of one test."""

from __future__ import annotations

import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kit import wait_until

from praisonai import _limits, _portal
from praisonai._errors import PathOutsideWorkspaceError, ProviderUnavailableError
from praisonai.compute.providers.ssh import SSHCompute, SSHHost, link_for
from praisonai.compute.testing.sshd import SSHServer

Made = list[tuple[SSHCompute, str]]
LoginShell = Callable[[str, str], None]


@pytest.fixture
def made() -> Iterator[Made]:
    """Instances to remove after the test, whatever happens in it."""
    instances: Made = []
    yield instances
    for provider, instance_id in instances:
        _portal.call(provider.shutdown, instance_id)


def provision(provider: SSHCompute, made: Made) -> str:
    instance_id = _portal.call(provider.provision).instance_id
    made.append((provider, instance_id))
    return instance_id


def fresh(sshd: SSHServer, request: pytest.FixtureRequest, **settings: object) -> SSHCompute:
    """A provider on a root of the test's own: a link of its own, which knows nothing of the host."""
    return SSHCompute(**sshd.connect_kwargs(root=f"hosts-{request.node.name[:40]}", **settings))


@pytest.fixture
def login_shell(sshd: SSHServer) -> Iterator[LoginShell]:
    """``login_shell(shell, bashrc)``: the sshd user's login shell and ~/.bashrc until the test ends."""
    if sshd.password is None:
        pytest.skip("needs root: the test sshd's own user, whose login shell may change")
    rc = sshd.home / ".bashrc"

    def use(shell: str, bashrc: str) -> None:
        subprocess.run(["usermod", "-s", shell, sshd.user], check=True, capture_output=True)
        rc.write_text(bashrc)

    yield use
    subprocess.run(["usermod", "-s", "/bin/sh", sshd.user], check=True, capture_output=True)
    rc.unlink(missing_ok=True)


def _left_on_host(sshd: SSHServer, provider: SSHCompute) -> list[str]:
    root = Path(provider.hosts[0].root)
    root = root if root.is_absolute() else sshd.home / root
    return sorted(p.name for p in root.glob("*") if p.name != ".praisonai") + sorted(
        p.name for p in root.glob(".praisonai/*")
    )


# ---- login shells -------------------------------------------------------------------------------

BANNER = "head -c 300000 /dev/zero | tr '\\0' B; echo; head -c 300000 /dev/zero | tr '\\0' E >&2\n"


def test_a_login_shell_that_prints_a_large_banner_runs_everything(
    sshd: SSHServer, login_shell: LoginShell, made: Made, request: pytest.FixtureRequest
) -> None:
    login_shell("/bin/bash", BANNER)
    provider = fresh(sshd, request)
    instance_id = provision(provider, made)
    assert _portal.call(provider.execute, instance_id, "echo hi").stdout == "hi\n"
    _portal.call(provider.write_file, instance_id, "a.txt", "x" * 5000)
    assert _portal.call(provider.read_file, instance_id, "a.txt") == b"x" * 5000
    _portal.call(provider.pause, instance_id)
    # the host command's answer is found after the banner: its size, not None
    assert (_portal.call(provider.pauser.paused_disk, instance_id) or 0) >= 4096
    _portal.call(provider.resume, instance_id)
    assert _portal.call(provider.shutdown, instance_id) is True


def test_a_login_shell_that_runs_nothing_fails_provision_naming_it(
    sshd: SSHServer, login_shell: LoginShell, request: pytest.FixtureRequest
) -> None:
    login_shell("/bin/false", "")
    provider = fresh(sshd, request)
    with pytest.raises(ProviderUnavailableError, match="login shell /bin/false") as refused:
        _portal.call(provider.provision)
    assert "\n" not in str(refused.value)
    assert _left_on_host(sshd, provider) == []


def test_an_rc_file_that_waits_for_input_fails_provision_within_the_start_timeout(
    sshd: SSHServer, login_shell: LoginShell, request: pytest.FixtureRequest
) -> None:
    login_shell("/bin/bash", "read -r line\n")
    provider = fresh(sshd, request, start_timeout=1)
    started = time.monotonic()
    with pytest.raises(ProviderUnavailableError, match=r"within 1 s.*login shell /bin/bash") as refused:
        _portal.call(provider.provision)
    assert time.monotonic() - started < 5
    assert "\n" not in str(refused.value)
    assert _left_on_host(sshd, provider) == []


def test_an_rc_file_that_reads_stdin_for_a_while_does_not_eat_requests(
    sshd: SSHServer, login_shell: LoginShell, made: Made, request: pytest.FixtureRequest
) -> None:
    login_shell("/bin/bash", "read -r -t 0.3 line\n")  # a prompt with a timeout: nothing to read
    provider = fresh(sshd, request)
    instance_id = provision(provider, made)
    other = fresh(sshd, request)  # a channel of its own: the helper starts behind the read again
    assert _portal.call(other.execute, instance_id, "echo clean").stdout == "clean\n"


def test_a_slow_start_is_not_charged_to_the_commands_timeout(
    sshd: SSHServer,
    login_shell: LoginShell,
    made: Made,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    login_shell("/bin/bash", "sleep 0.3\n")
    instance_id = provision(fresh(sshd, request), made)
    monkeypatch.setattr(_limits, "KILL_GRACE_S", 0.05)  # the guard past a command's timeout: short
    other = fresh(sshd, request)  # its helper starts (0.3 s) at this exec

    async def quick() -> str:
        return (await other.execute(instance_id, "echo in-time", timeout=0.1)).stdout

    assert _portal.call(quick) == "in-time\n"


# ---- a full remote disk -------------------------------------------------------------------------


@pytest.fixture
def small_disk(sshd: SSHServer) -> Iterator[Path]:
    """A 1 MiB tmpfs the sshd user owns (instances go there with ``root=``)."""
    if sshd.password is None:
        pytest.skip("needs root: mounts a tmpfs")
    where = Path(tempfile.mkdtemp(prefix="praisonai-small-disk-"))
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(where)], check=True)
    try:
        subprocess.run(["chown", sshd.user, str(where)], check=True)
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)
        where.rmdir()


def test_a_full_disk_fails_write_file_and_provision_in_one_sentence(
    sshd: SSHServer, small_disk: Path, made: Made
) -> None:
    provider = SSHCompute(**sshd.connect_kwargs(root=str(small_disk / "instances")))
    instance_id = provision(provider, made)
    with pytest.raises(OSError, match="no space left") as full:
        _portal.call(provider.write_file, instance_id, "big.bin", b"x" * (2 << 20))
    assert "\n" not in str(full.value)
    workspace = small_disk / "instances" / instance_id
    assert not (workspace / "big.bin").exists()
    assert [p.name for p in workspace.iterdir()] == []  # no partial file left beside it
    with pytest.raises(OSError), open(small_disk / "filler", "wb") as filler:
        filler.write(b"\0" * (1 << 20))  # what is left, and more: it stops at full
    with pytest.raises(OSError, match="no space left") as failed:
        _portal.call(provider.provision)
    assert "Failure" not in str(failed.value) and "\n" not in str(failed.value)


# ---- links the remote side plants ---------------------------------------------------------------


def _plant(provider: SSHCompute, instance_id: str, script: str) -> None:
    result = _portal.call(provider.execute, instance_id, script)
    assert result.exit_code == 0, result.stderr


def test_writes_and_uploads_never_follow_a_link_the_instance_planted(
    sshd: SSHServer, made: Made, tmp_path: Path
) -> None:
    provider = SSHCompute(**sshd.connect_kwargs())
    instance_id = provision(provider, made)
    outside = Path(tempfile.mkdtemp(prefix="praisonai-outside-", dir=sshd.dir))
    subprocess.run(["chown", "-R", f"{sshd.user}", str(outside)], check=False)
    _plant(provider, instance_id, f"ln -s {outside} dir && ln -s {outside}/target.txt file.txt")
    local = tmp_path / "tree"
    (local / "sub").mkdir(parents=True)
    (local / "sub" / "a.txt").write_text("local")
    attempts = [
        lambda: provider.write_file(instance_id, "dir/written.txt", "x"),
        lambda: provider.upload_file(instance_id, str(local / "sub" / "a.txt"), "dir/uploaded.txt"),
        lambda: provider.upload_file(instance_id, str(local), "dir"),
    ]
    for attempt in attempts:
        with pytest.raises(PathOutsideWorkspaceError, match="link"):
            _portal.call(attempt)
    # a link at the target itself is replaced, never written through
    _portal.call(provider.write_file, instance_id, "file.txt", "mine")
    _plant(provider, instance_id, f"mkdir up && ln -s {outside}/a.txt up/a.txt")
    _portal.call(provider.upload_file, instance_id, str(local / "sub"), "up")
    assert sorted(p.name for p in outside.iterdir()) == []
    assert _portal.call(provider.read_file, instance_id, "up/a.txt") == b"local"
    assert _portal.call(provider.read_file, instance_id, "file.txt") == b"mine"


def test_a_refused_tree_download_leaves_nothing_behind(sshd: SSHServer, made: Made, tmp_path: Path) -> None:
    provider = SSHCompute(**sshd.connect_kwargs())
    instance_id = provision(provider, made)
    _plant(provider, instance_id, "mkdir -p t/d && echo data > t/d/f.txt && ln -s /etc/passwd t/z")
    target = tmp_path / "got"
    with pytest.raises(PathOutsideWorkspaceError, match="link out"):
        _portal.call(provider.download_file, instance_id, "t", str(target))
    assert not target.exists() and list(tmp_path.iterdir()) == []


# ---- tunnelled connections ----------------------------------------------------------------------


def test_a_tunnelled_connection_closes_quietly_when_its_carrier_fails(
    sshd: SSHServer, made: Made, request: pytest.FixtureRequest
) -> None:
    quick = {"keepalive_s": 0.2, "keepalive_count": 1}
    bastion = SSHHost(**sshd.connect_kwargs(root="bastion", **quick))
    provider = fresh(sshd, request, jump=bastion, **quick)
    instance_id = provision(provider, made)
    inner = link_for(provider.hosts[0]).transports()[0]
    carrier = link_for(bastion).transports()[0]
    carrier.sock.shutdown(socket.SHUT_WR)  # what the carrier sends now fails: EOFError in paramiko
    # as paramiko's exit hook stops every connection: the tunnelled one's thread then closes its
    # channel on the failed carrier (an unhandled EOFError in that thread, before the fix)
    inner.stop_thread()
    inner.close()
    wait_until(lambda: not inner.is_active() and not carrier.is_active(), 5)
    assert _portal.call(provider.execute, instance_id, "echo again").stdout == "again\n"


def test_a_file_download_cut_short_leaves_the_file_that_was_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from praisonai.compute.providers.ssh import _files

    with SSHServer() as server:  # killed mid-download: a server of its own
        provider = SSHCompute(**server.connect_kwargs())
        instance_id = _portal.call(provider.provision).instance_id
        try:
            _portal.call(provider.execute, instance_id, "head -c 8000000 /dev/zero > big.bin")
            target = tmp_path / "big.bin"
            target.write_text("old")

            def killing() -> Callable[[int, int], None]:
                return lambda done, size: server.kill() if server.process is not None else None

            monkeypatch.setattr(_files, "sftp_callback", killing)
            with pytest.raises(Exception):  # noqa: B017  # whichever way the cut surfaces
                _portal.call(provider.download_file, instance_id, "big.bin", str(target))
            assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["big.bin"]
        finally:
            monkeypatch.undo()
            if server.process is None:
                server.start()
            _portal.call(provider.shutdown, instance_id)
