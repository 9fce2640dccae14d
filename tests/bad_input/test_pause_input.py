"""Pause settings a user gets wrong: each refused in one sentence naming the place, no traceback
(``praisonai sandbox run`` in a child process, the file in a project)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            "backend: docker\nidle_action: sleep\n",
            ".praisonai/environment.yaml:2: idle_action: must be 'stop' or 'pause'",
        ),
        (
            "backend: docker\nretain: 0\n",
            ".praisonai/environment.yaml:2: retain: must be greater than 0 seconds",
        ),
        ("backend: flyio\nidle_action: pause\n", "the flyio provider cannot honour idle_action='pause'"),
    ],
)
def test_a_bad_pause_setting_is_one_sentence(text: str, said: str, tmp_path: Path, home: Path) -> None:
    (tmp_path / ".praisonai").mkdir()
    (tmp_path / ".praisonai" / "environment.yaml").write_text(text)
    env = {**os.environ, "PRAISONAI_HOME": str(home)}
    r = subprocess.run(
        [sys.executable, "-m", "praisonai", "sandbox", "run", "echo", "hi"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env,
    )  # fmt: skip
    errors = [line for line in r.stderr.splitlines() if line.startswith("error:")]
    assert r.returncode == 125 and "Traceback" not in r.stderr and r.stdout == "", r
    assert len(errors) == 1 and said in errors[0], r.stderr
