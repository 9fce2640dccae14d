"""`praisonai env build` and `env captures` on real docker, run as the user would."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from praisonai.compute.config import ComputeConfig

pytestmark = pytest.mark.usefixtures("docker_ok")


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from praisonai.cli import main; main()", *args],
        capture_output=True, text=True, timeout=180, cwd=cwd,
    )  # fmt: skip


def test_build_captures_the_definition_once_and_captures_lists_it(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".praisonai").mkdir()
    marker = uuid.uuid4().hex
    (tmp_path / ".praisonai" / "environment.yaml").write_text(
        f"backend: docker\nsetup:\n  - echo {marker} > /opt/built\nenv:\n  TOKEN: hidden-value\n"
    )
    tag = ComputeConfig.coerce(
        {"setup": [f"echo {marker} > /opt/built"], "env": {"TOKEN": "hidden-value"}}
    ).capture_tag()
    try:
        first = cli(tmp_path, "env", "build")
        assert first.returncode == 0 and f"captured {tag}" in first.stdout, first.stderr
        again = cli(tmp_path, "env", "build")
        assert again.returncode == 0 and "up to date" in again.stdout, again.stderr
        listed = cli(tmp_path, "env", "captures", "--json")
        assert tag in [c["name"] for c in json.loads(listed.stdout)["captures"]]
        assert "hidden-value" not in first.stdout + again.stdout + listed.stdout
        dry = cli(tmp_path, "env", "captures", "--prune", "--older-than", "0", "--dry-run")
        assert f"would remove {tag}" in dry.stdout
        ran = cli(tmp_path, "sandbox", "run", "--", "cat", "/opt/built")  # starts from the capture
        assert ran.stdout == f"{marker}\n", ran.stderr
    finally:
        subprocess.run(["docker", "rmi", "-f", f"praisonai-capture:{tag}"], capture_output=True, check=False)


def test_no_env_value_reaches_the_capture_its_history_the_home_or_the_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docker commit records the container's config: a value given at create would sit in the
    image's ContainerConfig.Env even with Config.Env blanked."""
    (tmp_path / ".git").mkdir()
    (tmp_path / ".praisonai").mkdir()
    secret = f"s3cr3t-{uuid.uuid4().hex}"
    home = tmp_path / "home"
    monkeypatch.setenv("PRAISONAI_HOME", str(home))
    setup = f"echo {uuid.uuid4().hex} > /opt/built"
    (tmp_path / ".praisonai" / "environment.yaml").write_text(
        f"backend: docker\nsetup:\n  - {setup}\nenv:\n  TOKEN: {secret}\n"
    )
    tag = ComputeConfig.coerce({"setup": [setup], "env": {"TOKEN": secret}}).capture_tag()
    ref = f"praisonai-capture:{tag}"
    try:
        built = cli(tmp_path, "env", "build")
        assert built.returncode == 0, built.stderr
        inspected = subprocess.run(["docker", "image", "inspect", ref], capture_output=True, text=True)
        history = subprocess.run(["docker", "history", "--no-trunc", ref], capture_output=True, text=True)
        assert inspected.returncode == 0 and history.returncode == 0, inspected.stderr + history.stderr
        assert secret not in inspected.stdout and secret not in history.stdout
        # nothing of ours in the captured filesystem holds it (the helper's spool, its bound env)
        grep = 'grep -rlF -- "$1" /tmp /var /run /root /opt /etc /workspace 2>/dev/null; true'
        found = subprocess.run(
            ["docker", "run", "--rm", "--network", "none", "--entrypoint", "/bin/sh",
             ref, "-c", grep, "-", secret],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert found.returncode == 0 and found.stdout == "", found.stdout + found.stderr
        ran = cli(tmp_path, "sandbox", "run", "--", "sh", "-c", 'echo "$TOKEN"')  # starts from the capture
        assert ran.returncode == 0 and ran.stdout == f"{secret}\n", ran.stderr
        assert secret not in built.stdout + built.stderr + ran.stderr
        for path in home.rglob("*"):  # ledger, locks, capture stamps
            assert not path.is_file() or secret.encode() not in path.read_bytes(), path
    finally:
        subprocess.run(["docker", "rmi", "-f", ref], capture_output=True, check=False)


def test_build_on_a_provider_without_captures_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".praisonai").mkdir()
    (tmp_path / ".praisonai" / "environment.yaml").write_text('setup: ["true"]\n')
    r = cli(tmp_path, "env", "build", "--compute", "local")
    assert r.returncode == 2 and "cannot capture" in r.stderr and "Traceback" not in r.stderr
