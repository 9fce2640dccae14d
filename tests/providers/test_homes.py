"""Homes are a boundary: an instance made by one ``PRAISONAI_HOME`` is not resumed, connected to,
run in or read from by another, on a real docker engine, from real processes of that other home
(the library and the CLI). Each attempt is refused in one sentence before the container is touched,
the secret bound into the instance never comes out, a paused instance stays paused, and its own
home still resumes it. Every container made is removed afterwards, also when a test fails."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kit import container_state

import praisonai
from praisonai import Sandbox, _portal
from praisonai._errors import ForeignInstanceError
from praisonai._ledger import Ledger
from praisonai.compute.providers.docker import DockerCompute, container_name

_REPO = Path(praisonai.__file__).parents[1]
#: What every refusal says (the rest names the instance, this home and what to do).
REFUSED = "belongs to another praisonai home"

# Another home's process tries every library way in; one JSON line per attempt.
_OTHER_HOME = """
import json, sys
from praisonai import Sandbox, _portal
from praisonai.compute.providers.docker import DockerCompute

iid = sys.argv[1]
attempts = {
    "resume": lambda: _portal.call(DockerCompute().resume, iid).status.value,
    "pause": lambda: _portal.call(DockerCompute().pause, iid).status.value,
    "execute": lambda: _portal.call(DockerCompute().execute, iid, "echo $HOME_SECRET").stdout,
    "read_file": lambda: _portal.call(DockerCompute().read_file, iid, "/proc/1/environ").decode(),
    "start_process": lambda: _portal.call(
        DockerCompute().processes.start, iid, "echo $HOME_SECRET"
    ).process_id,
    "write_file": lambda: _portal.call(DockerCompute().write_file, iid, "/tmp/planted", "x"),
    "bind_env": lambda: _portal.call(DockerCompute().processes.bind_env, iid, {"HOME_SECRET": "replaced"}),
    "open_pty": lambda: _portal.call(lambda: DockerCompute().open_pty(iid, command="env")),
    "expose": lambda: _portal.call(DockerCompute().expose, iid, 8000),
    "connect+exec": lambda: Sandbox.connect(iid).exec("echo $HOME_SECRET").stdout,
}
for name, attempt in attempts.items():
    try:
        outcome = {"done": repr(attempt())}
    except Exception as exc:
        outcome = {"refused": f"{type(exc).__name__}: {exc}"}
    print(json.dumps({"attempt": name, **outcome}), flush=True)
"""


def _in_home(home: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PRAISONAI_HOME": str(home)}
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=_REPO, env=env)


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _in_home(home, sys.executable, "-c", "from praisonai.cli import main; main()", *args)


def _library_attempts(home: Path, instance_id: str) -> dict[str, dict[str, str]]:
    r = _in_home(home, sys.executable, "-c", _OTHER_HOME, instance_id)
    assert r.returncode == 0, r.stderr
    return {row["attempt"]: row for row in map(json.loads, r.stdout.splitlines())}


def _assert_refused(outcome: str, secret: str, instance_id: str, where: str) -> None:
    assert secret not in outcome, f"{where}: the secret came out: {outcome}"
    assert REFUSED in outcome and instance_id in outcome and "Traceback" not in outcome, f"{where}: {outcome}"


@pytest.mark.usefixtures("docker_ok")
def test_another_home_cannot_resume_connect_or_exec_in_a_paused_or_running_instance(
    home: Path, tmp_path: Path
) -> None:
    other, secret = tmp_path / "other-home", secrets.token_hex(16)
    sb = Sandbox.create("docker", idle_action="pause", env={"HOME_SECRET": secret}, environment=False)
    try:
        sb.pause()
        assert container_state(sb.id) == "exited"
        for name, row in _library_attempts(other, sb.id).items():
            _assert_refused(
                row.get("refused", row.get("done", "")), secret, sb.id, f"library {name} (paused)"
            )
            assert container_state(sb.id) == "exited", f"{name} woke the other home's instance"
        copied = tmp_path / "environ"
        for args in (
            ("compute", "resume", sb.id),
            ("sandbox", "exec", sb.id, "--", "sh", "-c", "echo $HOME_SECRET"),
            ("sandbox", "cp", f"{sb.id}:/proc/1/environ", str(copied)),
        ):
            r = _cli(other, *args)
            assert r.returncode != 0, f"{args}: {r}"
            _assert_refused(r.stdout + r.stderr, secret, sb.id, f"cli {args[:2]} (paused)")
            assert container_state(sb.id) == "exited" and not copied.exists()
        # Its own home resumes it, the secret bound as before; running, it is refused alike.
        sb.resume()
        assert sb.exec("echo $HOME_SECRET").stdout.strip() == secret
        r = _cli(other, "sandbox", "exec", sb.id, "--", "sh", "-c", "echo $HOME_SECRET")
        assert r.returncode != 0, r
        _assert_refused(r.stdout + r.stderr, secret, sb.id, "cli exec (running)")
        row = _library_attempts(other, sb.id)["execute"]
        _assert_refused(row.get("refused", row.get("done", "")), secret, sb.id, "library execute (running)")
        assert container_state(sb.id) == "running"
    finally:
        sb.close()
        subprocess.run(["docker", "rm", "-f", "-v", container_name(sb.id)], capture_output=True)


@pytest.mark.usefixtures("docker_ok")
def test_a_home_made_again_at_the_same_path_is_another_home(home: Path, make: Callable[..., Any]) -> None:
    """What names a home is a secret it keeps, not its path: another machine's home of the same
    path on a shared engine, or a home deleted and made again, is not the one that made it."""
    provider, instance_id = make(DockerCompute(), idle_action="pause")
    try:
        _portal.call(provider.pause, instance_id)
        shutil.rmtree(home)
        with pytest.raises(ForeignInstanceError, match=REFUSED):
            _portal.call(DockerCompute().resume, instance_id)
        assert container_state(instance_id) == "exited"
    finally:
        subprocess.run(["docker", "rm", "-f", "-v", container_name(instance_id)], capture_output=True)


@pytest.mark.usefixtures("docker_ok")
def test_gc_of_another_home_leaves_a_paused_instance_alone_even_with_a_forged_ledger_row(
    home: Path, tmp_path: Path, make: Callable[..., Any]
) -> None:
    provider, instance_id = make(DockerCompute(), idle_action="pause")
    other = tmp_path / "other-home"
    try:
        _portal.call(provider.pause, instance_id)
        r = _cli(other, "compute", "ps", "--json")  # listed, as documented: ps shows every instance
        assert any(row["instance"] == instance_id for row in json.loads(r.stdout)), r
        row = Ledger.default().get(instance_id)
        assert row is not None
        Ledger(other / "ledger.sqlite3").record(
            instance_id, "docker", row.spec, row.owner, row.created_at, lifetime=row.lifetime
        )
        r = _cli(other, "compute", "gc", "--retain", "1s")
        assert container_state(instance_id) == "exited", r
        assert f"{instance_id}" in r.stderr and REFUSED in r.stderr, r
    finally:
        subprocess.run(["docker", "rm", "-f", "-v", container_name(instance_id)], capture_output=True)
