"""Bad input to the docker provider: a mount of a missing host path, and capture pruning by a
count or an age that means nothing. Each gets one clear sentence and changes nothing: no host
directory created, no container, no ledger row, no capture removed, no engine call at all."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import praisonai
from praisonai import _portal
from praisonai._errors import ConfigError
from praisonai._ledger import Ledger, home_tag
from praisonai.compute.providers.docker import DockerCompute

_REPO = Path(praisonai.__file__).parents[1]


def containers_of(home: Path) -> list[str]:
    found = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=praisonai.home={home_tag(home)}"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return found.stdout.split()


@pytest.mark.usefixtures("docker_ok")
@pytest.mark.parametrize(
    ("mount", "fragment"),
    [
        ("{missing}:/data", "does not exist"),
        ("{missing}:/data:ro", "does not exist"),
        ("{missing}/deeper/still:/data:rw", "does not exist"),
    ],
)
def test_a_mount_of_a_missing_host_path_is_refused(
    home: Path, tmp_path: Path, mount: str, fragment: str
) -> None:
    """Docker would create the missing path on the host, as root."""
    missing = tmp_path / "not-there"
    spec = mount.format(missing=missing)
    try:
        with pytest.raises(ConfigError, match=fragment) as caught:
            _portal.call(DockerCompute().provision, {"mount_paths": [spec]})
    finally:  # had it been accepted: remove the container it made
        for container in containers_of(home):
            subprocess.run(["docker", "rm", "-f", container], capture_output=True, check=False)
    assert str(missing) in str(caught.value) and "\n" not in str(caught.value)
    assert not missing.exists()
    assert containers_of(home) == []
    assert Ledger.default().entries() == []


# Pruning: validated before any engine call (the engine here does not exist, so any call would
# fail with a different message).
PRUNE_ARGS: list[tuple[dict[str, Any], str]] = [
    ({"keep": -1}, "keep must be a whole number >= 0, not -1"),
    ({"keep": 1.5}, "keep must be a whole number >= 0, not 1.5"),
    ({"keep": True}, "keep must be a whole number >= 0, not True"),
    ({"keep": "2"}, "keep must be a whole number >= 0, not '2'"),
    ({"older_than_s": -1}, "older_than_s must be a finite number of seconds >= 0, not -1"),
    ({"older_than_s": math.nan}, "older_than_s must be a finite number of seconds >= 0, not nan"),
    ({"older_than_s": math.inf}, "older_than_s must be a finite number of seconds >= 0, not inf"),
    ({"older_than_s": "5"}, "older_than_s must be a finite number of seconds >= 0, not '5'"),
    ({"older_than_s": False}, "older_than_s must be a finite number of seconds >= 0, not False"),
]


@pytest.mark.parametrize(("args", "message"), PRUNE_ARGS)
def test_prune_refuses_a_count_or_age_that_means_nothing(args: dict[str, Any], message: str) -> None:
    provider = DockerCompute(base_url="unix:///nonexistent/docker.sock")
    with pytest.raises(ConfigError) as caught:
        _portal.call(lambda: provider.capturer.prune(**args))
    assert str(caught.value) == message


def cli(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PRAISONAI_HOME": str(home), "DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    return subprocess.run(
        [sys.executable, "-c", "from praisonai.cli import main; main()", *args],
        capture_output=True, text=True, timeout=120, cwd=_REPO, env=env,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--keep", "-1"], "--keep must be a count >= 0, not -1"),
        (["--older-than", "-1"], "--older-than must be a number of days >= 0, not -1.0"),
        (["--older-than", "nan"], "--older-than must be a number of days >= 0, not nan"),
        (["--older-than", "inf"], "--older-than must be a number of days >= 0, not inf"),
        (["--older-than", "-inf", "--keep", "2"], "--older-than must be a number of days >= 0, not -inf"),
    ],
)
def test_env_captures_prune_refuses_bad_options_in_one_line(
    home: Path, args: list[str], message: str
) -> None:
    r = cli("env", "captures", "--prune", *args, home=home)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.strip() == f"error: {message}"
    assert not home.exists() or not (home / "captures").exists()  # nothing was touched
