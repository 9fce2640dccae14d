"""``--json`` on the commands that act (stop, pause, resume, gc, warm, env validate, env build):
stdout is exactly one JSON document whose shape is the same across them, and the exit status is
the one the text output has."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from praisonai import Sandbox

_REPO = Path(__file__).resolve().parents[2]


def cli(*args: str, cwd: Path | None = None) -> tuple[int, Any, str]:
    """Exit status, stdout parsed as ONE JSON document (it fails otherwise), stderr."""
    env = {**os.environ, "PYTHONPATH": str(_REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "praisonai", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )
    return done.returncode, json.loads(done.stdout), done.stderr


def test_stop_pause_and_resume_print_one_outcome_shape(home: Path) -> None:
    paused, stopped = Sandbox.create("local"), Sandbox.create("local")
    try:
        code, out, _ = cli("compute", "pause", paused.id, "--json")
        assert code == 0 and out == {
            "done": [{"instance": paused.id, "status": "paused"}],
            "failed": [],
            "unknown": [],
            "problems": [],
        }
        code, out, _ = cli("compute", "resume", paused.id, "--json")
        assert code == 0 and out["done"] == [{"instance": paused.id, "status": "running"}]
        code, out, _ = cli("compute", "stop", stopped.id, "local_0123456789ab", "--json")
        assert code == 1  # one unknown: as the text output
        assert out["done"] == [{"instance": stopped.id, "status": "stopped"}]
        assert out["unknown"] == ["local_0123456789ab"] and out["failed"] == [] and out["forgotten"] == []
        code, out, _ = cli("compute", "pause", "local_0123456789ab", "--json")
        assert code == 1 and out["unknown"] == ["local_0123456789ab"] and out["done"] == []
    finally:
        paused.close()
        stopped.close()


def test_gc_prints_each_orphan_with_what_was_done(home: Path) -> None:
    code, out, _ = cli("compute", "gc", "--dry-run", "--json")
    expected = {"dry_run": True, "orphans": [], "failures": 0, "problems": [], "snapshots": []}
    assert code == 0 and out == expected


def test_warm_prints_the_pool(home: Path, tmp_path: Path) -> None:
    code, out, _ = cli("compute", "warm", "--size", "1", "-c", "local", "--json", cwd=tmp_path)
    try:
        assert code == 0 and out["provider"] == "local" and (out["size"], out["made"]) == (1, 1)
        assert isinstance(out["definition_hash"], str) and isinstance(out["idle_timeout_s"], int | float)
    finally:
        cli("compute", "stop", "--all", "--json")


@pytest.mark.parametrize(
    ("text", "ok", "code"),
    [("setup: ['echo hi']\n", True, 0), ("setup: [true]\nbogus: 1\n", False, 2)],
)
def test_env_validate_prints_every_problem_or_the_definition(
    tmp_path: Path, text: str, ok: bool, code: int
) -> None:
    (tmp_path / ".praisonai").mkdir()
    (tmp_path / ".praisonai" / "environment.yaml").write_text(text)
    status, out, _ = cli("env", "validate", "--json", cwd=tmp_path)
    assert status == code and out["ok"] is ok and out["source"] == ".praisonai/environment.yaml"
    if ok:
        assert out["problems"] == [] and len(out["definition_hash"]) == 16
    else:
        assert out["definition_hash"] is None and len(out["problems"]) == 2
        assert out["problems"][1].startswith(".praisonai/environment.yaml:2: bogus: unknown key")


def test_env_build_says_there_is_nothing_to_capture(home: Path, tmp_path: Path) -> None:
    (tmp_path / ".praisonai").mkdir()
    (tmp_path / ".praisonai" / "environment.yaml").write_text("env: {A: '1'}\n")
    code, out, _ = cli("env", "build", "-c", "docker", "--json", cwd=tmp_path)
    assert code == 0 and out["capture"] is None and out["built"] is False and out["duration_s"] is None
