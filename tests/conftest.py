"""Shared fixtures. Real services only: Docker, bubblewrap and processes on this machine.

Docker tests skip when no engine (or no sandbox image) is here, and say why — unless
PRAISONAI_REQUIRE_DOCKER=1 (CI sets it), which turns that skip into a failure.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator

import pytest

# Every test (and every child process it starts) keeps its state in a throwaway home.
_HOME = tempfile.mkdtemp(prefix="praisonai-test-home-")
os.environ["PRAISONAI_HOME"] = _HOME


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    shutil.rmtree(_HOME, ignore_errors=True)


def docker_reason() -> str | None:
    """Why docker tests cannot run here, or None when they can."""
    from praisonai._errors import MissingDependencyError
    from praisonai.compute.registry import resolve_compute

    try:
        return resolve_compute("docker").unavailable_reason()
    except MissingDependencyError as exc:
        return str(exc)


@pytest.fixture(scope="session")
def docker_ok() -> None:
    reason = docker_reason()
    if reason is None:
        return
    if os.environ.get("PRAISONAI_REQUIRE_DOCKER") == "1":
        pytest.fail(f"PRAISONAI_REQUIRE_DOCKER=1 but docker cannot run: {reason}")
    pytest.skip(f"docker not usable here: {reason}")


@pytest.fixture(scope="session")
def bwrap_ok() -> None:
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap (bwrap) is not installed")


@pytest.fixture(scope="session", autouse=True)
def no_leaked_containers() -> Iterator[None]:
    """After the whole suite, no container of this test run may be left on the engine."""
    yield
    if shutil.which("docker") is None or docker_reason() is not None:
        return
    left = subprocess.run(
        ["docker", "ps", "-aq", "--filter", "label=praisonai.owner"],
        capture_output=True, text=True, check=False,
    ).stdout.split()  # fmt: skip
    mine = [c for c in left if _owned_by_this_run(c)]
    assert not mine, f"containers leaked by the test run: {mine}"


def _owned_by_this_run(container: str) -> bool:
    owner = subprocess.run(
        ["docker", "inspect", "-f", '{{index .Config.Labels "praisonai.owner"}}', container],
        capture_output=True, text=True, check=False,
    ).stdout.strip()  # fmt: skip
    return owner.endswith(f":{os.getpid()}")
