"""Shared fixtures. Real services only: Docker, OpenSSH's sshd, bubblewrap and processes here.

Docker and SSH tests skip when the service cannot run here, and say why — unless
PRAISONAI_REQUIRE_DOCKER=1 or PRAISONAI_REQUIRE_SSH=1 (CI sets both) turns that skip into a failure.
"""

from __future__ import annotations

import fcntl
import gc
import os
import shutil
import signal
import subprocess
import tempfile
import tracemalloc  # noqa: F401  (imported up front: pytest's unraisable hook imports it lazily, and a

# garbage-collected socket reported in the middle of that import crashes the hook)
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kit import Instance, provisioned

from praisonai import _portal
from praisonai.compute import _home_reaper, _reaper
from praisonai.compute.base import ComputeProvider
from praisonai.compute.testing.sshd import SSHServer, sshd_reason

# A run a non-interactive shell started in the background (`pytest &`) inherits SIGINT ignored,
# and so would every child a test sends Ctrl-C to: they get the default back.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# Every test (and every child process it starts) keeps its state in a throwaway home.
_HOME = tempfile.mkdtemp(prefix="praisonai-test-home-")
os.environ["PRAISONAI_HOME"] = _HOME
# Inherited by every process this run starts (the test sshds included), so the leak checks below
# see this run's processes only, not those of another run on the same machine.
_RUN_MARK = f"PRAISONAI_TEST_RUN={os.getpid()}-{os.urandom(4).hex()}"
os.environ["PRAISONAI_TEST_RUN"] = _RUN_MARK.partition("=")[2]


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


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A PRAISONAI_HOME of this test's own (ledger, locks, local instances), inherited by the
    child processes it starts, so it sees only what it made."""
    path = tmp_path / "home"
    monkeypatch.setenv("PRAISONAI_HOME", str(path))
    return path


def _skip_unless_required(service: str, reason: str | None) -> None:
    if reason is None:
        return
    flag = f"PRAISONAI_REQUIRE_{service.upper()}"
    if os.environ.get(flag) == "1":
        pytest.fail(f"{flag}=1 but {service} cannot run: {reason}")
    pytest.skip(f"{service} not usable here: {reason}")


@pytest.fixture
def collect_sdk_garbage() -> Iterator[None]:
    """For tests that drive a cloud SDK in this process: its handles (grpclib, pyqwest, connect
    streams) finalized by a GC pass that lands inside a later ``ast.parse`` (pytest's assertion
    rewriting, a plugin's late import) trip CPython 3.11.7's "AST constructor recursion depth
    mismatch". Collecting them after each such test, while they are ours, avoids it (a full
    collection costs ~70 ms, so not after every test)."""
    yield
    gc.collect()


@pytest.fixture(autouse=True)
def alone_when_marked(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """Under pytest-xdist a test marked ``alone`` runs with no other test of the run beside it:
    each test holds the run's lock, shared, and an ``alone`` one holds it exclusively (flock: a
    worker that dies lets go of it)."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        yield
        return
    alone = request.node.get_closest_marker("alone") is not None
    # the workers' temporary directories share their parent: one per run
    with open(tmp_path_factory.getbasetemp().parent / "alone.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        yield


@pytest.fixture(scope="session")
def skip_unless_required() -> Callable[[str, str | None], None]:
    """``skip_unless_required(service, reason)``: skip (or, when CI requires the service, fail)
    a test whose service cannot run here for ``reason``; a None reason does nothing."""
    return _skip_unless_required


@pytest.fixture(scope="session")
def docker_ok() -> None:
    _skip_unless_required("docker", docker_reason())


@pytest.fixture(scope="session")
def sshd() -> Iterator[SSHServer]:
    """A real OpenSSH server on 127.0.0.1 for the whole run (its own port, keys and user)."""
    _skip_unless_required("ssh", sshd_reason())
    with SSHServer() as server:
        yield server


@pytest.fixture(scope="module")
def docker_instance(docker_ok: None) -> Iterator[Instance]:
    """One docker instance shared by the tests of a module."""
    from praisonai.compute.providers.docker import DockerCompute

    yield from provisioned(DockerCompute())


@pytest.fixture(scope="module")
def ssh_instance(sshd: SSHServer) -> Iterator[Instance]:
    """One instance on the test sshd shared by the tests of a module."""
    from praisonai.compute.providers.ssh import SSHCompute

    yield from provisioned(SSHCompute(**sshd.connect_kwargs()))


@pytest.fixture
def make() -> Iterator[Callable[..., Instance]]:
    """Provision on a provider; everything made is shut down afterwards (idempotent)."""
    made: list[Instance] = []

    def provision(provider: ComputeProvider, **config: Any) -> Instance:
        made.append((provider, _portal.call(provider.provision, config).instance_id))
        return made[-1]

    yield provision
    for provider, instance_id in made:
        _portal.call(provider.shutdown, instance_id)


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
    # A capture inherits its build container's labels: one owned by this run outlived its test.
    images = subprocess.run(
        ["docker", "images", "-q", "--filter", "label=praisonai.capture",
         "--filter", f"label=praisonai.owner={_owner_of_this_run()}"],
        capture_output=True, text=True, check=False,
    ).stdout.split()  # fmt: skip
    assert not images, f"captures leaked by the test run: {images}"


def _owned_by_this_run(container: str) -> bool:
    owner = subprocess.run(
        ["docker", "inspect", "-f", '{{index .Config.Labels "praisonai.owner"}}', container],
        capture_output=True, text=True, check=False,
    ).stdout.strip()  # fmt: skip
    return owner.endswith(f":{os.getpid()}")


@pytest.fixture(scope="session", autouse=True)
def no_leaked_sshd() -> Iterator[None]:
    """After the whole suite, no test sshd (nor a process it started) may still run, and the users
    made for them are gone. Instances' own processes are checked where they are shut down."""
    yield
    found = subprocess.run(["pgrep", "-f", "praisonai-sshd-"], capture_output=True, text=True, check=False)
    left = [pid for pid in found.stdout.split() if _started_by_this_run(pid)]
    assert not left, f"test sshd processes leaked: {left}"
    users = {line.split(":", 1)[0] for line in subprocess.run(
        ["getent", "passwd"], capture_output=True, text=True, check=False
    ).stdout.splitlines()}  # fmt: skip
    assert not users & SSHServer.users_made, "a test sshd's user was left behind"


def _started_by_this_run(pid: str) -> bool:
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False  # gone already
    return _RUN_MARK.encode() in environ.split(b"\0")


def _owner_of_this_run() -> str:
    from praisonai.compute.lifecycle import owner_tag

    return owner_tag()


@pytest.fixture
def watchdog_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process's reaper stops nothing: what stops an instance is inside it (its watchdog)."""
    monkeypatch.setattr(_reaper, "reason_to_stop", lambda *args, **kwargs: None)


@pytest.fixture
def no_home_reaper(monkeypatch: pytest.MonkeyPatch) -> None:
    """No home reaper process is started by this process (it removes a paused instance past its
    ttl or retain age): what removes one is what the test calls (``gc``, a resume)."""
    monkeypatch.setattr(_home_reaper, "ensure_running", lambda home=None: False)
