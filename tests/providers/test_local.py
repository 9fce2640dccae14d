"""Local-specific promises: workspace containment, bubblewrap isolation, capability checks."""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from praisonai import _portal
from praisonai._errors import (
    PathOutsideWorkspaceError,
    ProviderUnavailableError,
    UnsupportedFeatureError,
)
from praisonai.compute.providers.local import LocalCompute


@pytest.fixture
def plain() -> Iterator[tuple[LocalCompute, str]]:
    provider = LocalCompute()
    info = _portal.call(provider.provision)
    yield provider, info.instance_id
    _portal.call(provider.shutdown, info.instance_id)


@pytest.fixture
def isolated(bwrap_ok: None) -> Iterator[tuple[LocalCompute, str]]:
    provider = LocalCompute(isolate=True)
    info = _portal.call(provider.provision, {"network": "none"})
    yield provider, info.instance_id
    _portal.call(provider.shutdown, info.instance_id)


def test_paths_outside_the_workspace_are_refused(plain, tmp_path: Path) -> None:
    provider, instance_id = plain
    for path in ("../../escape.txt", "/etc/passwd", "/tmp/x"):
        with pytest.raises(PathOutsideWorkspaceError):
            _portal.call(provider.write_file, instance_id, path, b"x")
    outside = tmp_path / "secret"
    outside.write_text("host secret")
    _portal.call(provider.execute, instance_id, f"ln -s {outside} link")
    with pytest.raises(PathOutsideWorkspaceError):
        _portal.call(provider.read_file, instance_id, "link")
    assert not Path(os.environ["PRAISONAI_HOME"], "escape.txt").exists()


def test_shutdown_removes_the_workspace_and_kills_what_runs(plain) -> None:
    provider, instance_id = plain
    workspace = Path(_portal.call(provider.get_status, instance_id).metadata["workspace"])
    _portal.call(lambda: provider.execute(instance_id, "sleep 302 > /dev/null 2>&1 &"))
    assert _portal.call(provider.shutdown, instance_id)
    assert not workspace.exists()
    assert not any("sleep\x00302" in _cmdline(p) for p in Path("/proc").glob("[0-9]*"))


def test_isolated_sees_no_host_home_and_no_network(isolated) -> None:
    provider, instance_id = isolated
    r = _portal.call(provider.execute, instance_id, "ls /root /home 2>&1; cat /proc/net/dev; touch /usr/x")
    assert "No such file" in r.stdout
    assert "eth0" not in r.stdout and "Read-only" in r.stderr
    assert _portal.call(provider.execute, instance_id, "pwd").stdout == "/workspace\n"


@pytest.fixture
def home_under_opt(bwrap_ok: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A PRAISONAI_HOME beneath /opt, a path bubblewrap binds read-only into every sandbox."""
    home = Path(tempfile.mkdtemp(prefix="praisonai-test-home-", dir="/opt"))
    monkeypatch.setenv("PRAISONAI_HOME", str(home))
    try:
        yield home
    finally:
        shutil.rmtree(home, ignore_errors=True)


def test_isolated_instances_never_see_the_home_or_each_others_env(home_under_opt: Path) -> None:
    secret = f"s3cr3t-{uuid.uuid4().hex}"
    provider = LocalCompute(isolate=True)
    a = _portal.call(provider.provision, {"env": {"TOKEN": secret}}).instance_id
    try:
        b = _portal.call(provider.provision).instance_id
        try:
            assert _portal.call(provider.execute, a, 'echo "$TOKEN"').stdout == f"{secret}\n"
            _portal.call(provider.write_file, a, "notes.txt", secret)
            record = home_under_opt / "local" / a / "instance.json"
            assert secret in record.read_text()  # the attack's target is there, on the host
            probe = (
                f"cat {record} {record.parent}/workspace/notes.txt 2>&1; ls {home_under_opt} 2>&1; "
                "find / -xdev -name instance.json 2>/dev/null; "
                f"timeout 60 grep -rlsF -- {secret} {home_under_opt} /etc /var /tmp /run /home /root "
                "/workspace; true"
            )
            seen = _portal.call(lambda: provider.execute(b, probe, timeout=120))
            assert secret not in seen.stdout + seen.stderr
            assert seen.stdout.count("No such file") == 2 and "instance.json\n" not in seen.stdout
            assert "local" not in seen.stdout.splitlines()  # the home is empty in there
        finally:
            _portal.call(provider.shutdown, b)
    finally:
        _portal.call(provider.shutdown, a)
    assert (home_under_opt / "local").stat().st_mode & 0o077 == 0


def test_isolation_without_bwrap_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    provider = LocalCompute(isolate=True)
    assert "bubblewrap" in (provider.unavailable_reason() or "")
    with pytest.raises(ProviderUnavailableError, match="apt-get install bubblewrap"):
        _portal.call(provider.provision)
    assert _portal.call(provider.list_instances) == []


def test_fields_local_cannot_honour_are_rejected() -> None:
    provider = LocalCompute()
    for field in ({"cpu": 2}, {"image": "debian"}, {"network": "none"}, {"packages": {"pip": ["x"]}}):
        with pytest.raises(UnsupportedFeatureError):
            _portal.call(provider.provision, field)


def test_failed_setup_removes_the_instance() -> None:
    provider = LocalCompute()
    from praisonai._errors import ProvisionError

    with pytest.raises(ProvisionError, match="exited 7"):
        _portal.call(provider.provision, {"setup": ["echo ok", "exit 7"]})
    assert _portal.call(provider.list_instances) == []


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


@pytest.mark.parametrize("which", ["plain", "isolated"])
def test_exec_returns_when_its_shell_exits_though_a_child_holds_its_output(
    which: str, request: pytest.FixtureRequest
) -> None:
    """As on docker: the command is its shell; a child it leaves running in the background, its
    output still open, is not waited for, and nothing written before the shell's end is lost."""
    provider, instance_id = request.getfixturevalue(which)
    line = "sleep 60 & head -c 1000000 /dev/zero | tr '\\0' x; echo done >&2"
    result = _portal.call(lambda: provider.execute(instance_id, line, timeout=10))
    assert (result.exit_code, result.timed_out, result.stderr) == (0, False, "done\n")
    assert result.stdout == "x" * 1_000_000
