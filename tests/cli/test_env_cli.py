"""``praisonai env validate | show | plan`` and ``sandbox run``'s use of the environment file, as the
real command in a child process whose working directory is a temporary repository."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from praisonai.sandbox.environment import effective_config

SHOWN = ".praisonai/environment.yaml"
GOOD = """\
image: python:3.12
packages:
  pip: [requests>=2]
setup: make
env:
  TOKEN: hunter2-secret
resources: {memory_mb: 2048}
network: none
idle_timeout: 600
"""


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from praisonai.cli import main; main()", *args],
        capture_output=True, text=True, timeout=120, cwd=cwd,
    )  # fmt: skip


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "src").mkdir()
    return tmp_path


def declare(repo: Path, text: str) -> Path:
    path = repo / SHOWN
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return path


def test_validate_ok_prints_the_definition_hash(repo: Path) -> None:
    path = declare(repo, GOOD)
    expected = effective_config(path=path).config.definition_hash()
    r = cli(repo / "src", "env", "validate")  # found from a subdirectory
    assert (r.returncode, r.stdout) == (0, f"ok: {path} (definition {expected})\n")
    assert cli(repo, "env", "validate").stdout == f"ok: {SHOWN} (definition {expected})\n"


def test_validate_lists_every_problem_with_line_and_key(repo: Path) -> None:
    declare(repo, "image: x\nresources:\n  mem: 1\nnetwork: open\ncapture: 'false'\n")
    r = cli(repo, "env", "validate")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"{SHOWN}:3: resources.mem: unknown key (allowed: cpu, memory_mb, gpu, disk)" in r.stderr
    assert f"{SHOWN}:4: network: must be 'none', 'unrestricted' or {{allow: [hosts]}}" in r.stderr
    assert f"{SHOWN}:5: capture: must be true or false" in r.stderr


def test_validate_reports_yaml_syntax_errors_with_line_and_column(repo: Path) -> None:
    declare(repo, "image: x\nsetup: [a, b\n")
    r = cli(repo, "env", "validate")
    assert r.returncode == 2 and f"{SHOWN}:3:1: invalid YAML" in r.stderr and "Traceback" not in r.stderr


def test_validate_without_a_file_says_where_it_looked(repo: Path) -> None:
    r = cli(repo, "env", "validate")
    assert r.returncode == 2 and f"no {SHOWN} in the working directory" in r.stderr


def test_validate_an_explicit_path(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    other = tmp_path_factory.mktemp("other") / "env.yaml"
    other.write_text("image: x\n")
    assert cli(repo, "env", "validate", str(other)).stdout.startswith(f"ok: {other} (definition ")


def test_show_masks_env_values_and_never_prints_the_capture_key(repo: Path) -> None:
    path = declare(repo, GOOD)
    config = effective_config(path=path).config
    r = cli(repo, "env", "show")
    assert r.returncode == 0, r.stderr
    assert f"source: {SHOWN}" in r.stdout and config.definition_hash() in r.stdout
    assert "TOKEN" in r.stdout and "***" in r.stdout
    for secret in ("hunter2", config.capture_key(), config.capture_tag()):
        assert secret not in r.stdout + r.stderr


def test_show_json(repo: Path) -> None:
    declare(repo, GOOD)
    data = json.loads(cli(repo, "env", "show", "--json").stdout)
    assert data["source"] == SHOWN and data["config"]["env"] == {"TOKEN": "***"}
    assert data["config"]["memory_mb"] == 2048 and data["config"]["cpu"] is None
    assert "memory_mb" in data["from_file"] and "cpu" not in data["from_file"]


def test_show_without_a_file_shows_the_defaults(repo: Path) -> None:
    data = json.loads(cli(repo, "env", "show", "--json").stdout)
    assert data["source"] is None and data["config"]["working_dir"] == "/workspace"


def test_plan_says_how_each_provider_honours_each_field(repo: Path) -> None:
    declare(repo, GOOD)
    data = json.loads(cli(repo, "env", "plan", "--json").stdout)
    plans = {p["name"]: p for p in data["providers"]}
    assert {"docker", "local", "ssh"} <= set(plans)
    docker = {f["field"]: f["support"] for f in plans["docker"]["fields"]}
    local = {f["field"]: f["support"] for f in plans["local"]["fields"]}
    assert docker["image"] == "native" and local["image"] == "unsupported"
    assert docker["idle_timeout"] == "native" and local["idle_timeout"] == "emulated"
    assert local["env"] == local["setup"] == "native"
    assert plans["docker"]["provisions"] and not plans["local"]["provisions"]


def test_plan_shows_the_runtime_and_who_can_honour_it(repo: Path) -> None:
    declare(repo, "runtime: runsc\nnetwork: none\n")
    data = json.loads(cli(repo, "env", "plan", "--json", "-c", "docker", "-c", "local").stdout)
    plans = {p["name"]: {f["field"]: f for f in p["fields"]} for p in data["providers"]}
    assert plans["docker"]["runtime"]["support"] == "native"
    assert "checked at start" in plans["docker"]["runtime"]["why"]
    local = plans["local"]["runtime"]
    assert (local["support"], local["why"]) == ("unsupported", "no gvisor capability")


def test_plan_for_named_providers_as_a_table(repo: Path) -> None:
    declare(repo, GOOD)
    r = cli(repo, "env", "plan", "--compute", "local")
    assert r.returncode == 0, r.stderr
    assert "unsupported" in r.stdout and "docker " not in r.stdout
    assert "local: provisioning is refused: it cannot honour image, packages" in r.stdout


def test_sandbox_run_uses_the_file_and_says_so(repo: Path) -> None:
    declare(repo, "backend: local\nenv: {GREETING: from-file, OTHER: file}\n")
    r = cli(repo / "src", "sandbox", "run", "-e", "OTHER=arg", "--", "sh", "-c", 'echo "$GREETING $OTHER"')
    assert (r.returncode, r.stdout) == (0, "from-file arg\n"), r.stderr
    assert "environment: " in r.stderr and "compute: local (backend from the environment file)" in r.stderr


def test_sandbox_run_no_environment_and_explicit_path(repo: Path) -> None:
    declare(repo, "env: {GREETING: from-file}\n")
    script = 'echo "${GREETING:-unset}"'
    r = cli(repo, "sandbox", "run", "-c", "local", "--no-environment", "--", "sh", "-c", script)
    assert (r.returncode, r.stdout) == (0, "unset\n") and "environment:" not in r.stderr
    other = repo / "other.yaml"
    other.write_text("env: {GREETING: other}\n")
    r = cli(repo, "sandbox", "run", "-c", "local", "--environment", str(other), "--", "sh", "-c", script)
    assert (r.returncode, r.stdout) == (0, "other\n")


def test_sandbox_run_with_an_invalid_file_is_one_clean_error(repo: Path) -> None:
    declare(repo, "env:\n  A: x\npackages: {pip: ['a;rm -rf /']}\n")
    r = cli(repo, "sandbox", "run", "-c", "local", "--", "true")
    assert r.returncode == 125 and "Traceback" not in r.stderr
    assert f"{SHOWN}:3: packages.pip[0]: pip package 'a;rm -rf /' is not a package specifier" in r.stderr
