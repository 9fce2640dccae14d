"""The docker provider over a pool of engines: ``DockerCompute(hosts=[...])``.

Three extra dockerds, each in its own network namespace (``.ci/dockerd-pool.sh``): started here,
or by ``.ci/run`` (``PRAISONAI_TEST_DOCKERD_POOL`` names their directory). They hold a 3 MB busybox
image, so starting them takes seconds. Skipped with the reason where this machine cannot start
them, unless ``PRAISONAI_REQUIRE_DOCKER_POOL=1`` (CI) makes that a failure.
"""

from __future__ import annotations

import collections
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from served import TARGETS, run_check

from praisonai import _portal
from praisonai._errors import ConfigError, InstanceNotFoundError, ProviderUnavailableError
from praisonai._ledger import home_tag
from praisonai._types import InstanceStatus
from praisonai.compute.lifecycle import LABEL_HOME, LABEL_PROVIDER
from praisonai.compute.providers.docker import DockerCompute, DockerHost
from praisonai.compute.providers.docker._client import remove_container
from praisonai.compute.testing import Context

# Its engines are the run's own: it counts their containers and kills one.
pytestmark = pytest.mark.alone

SCRIPT = Path(__file__).resolve().parents[2] / ".ci" / "dockerd-pool.sh"
IMAGE = "praisonai-pool-test:busybox"
ENGINES = 3
#: A representative part of the conformance suite (the whole of it runs on the single engine).
POOL_CHECKS = [
    "exit_code_stdout_stderr",
    "timeout_kills_process_tree",
    "env_and_cwd_per_call",
    "binary_round_trip",
    "upload_download_tree",
    "shutdown_is_idempotent",
    "visible_across_processes",
]


def _pool_reason() -> str | None:
    if os.geteuid() != 0:
        return "starting extra dockerds needs root"
    missing = [t for t in ("dockerd", "docker", "nsenter", "ip", "busybox", "ldd") if shutil.which(t) is None]
    return f"{', '.join(missing)} not installed" if missing else None


def _up(where: Path) -> None:
    subprocess.run(["bash", str(SCRIPT), "up", str(where), str(ENGINES), "busybox"], check=True, timeout=300)


@pytest.fixture(scope="module")
def engines() -> Iterator[Path]:
    """The directory of the running extra engines (``dI/docker.sock``, ``dI/docker.pid``)."""
    yield from running_engines()


def running_engines() -> Iterator[Path]:
    """``engines``, for other modules' fixtures (the ssh pool's)."""
    given = os.environ.get("PRAISONAI_TEST_DOCKERD_POOL")
    if given:
        _up(Path(given))  # restarts one a previous run killed; a no-op otherwise
        yield Path(given)
        return
    if reason := _pool_reason():
        if os.environ.get("PRAISONAI_REQUIRE_DOCKER_POOL") == "1":
            pytest.fail(f"PRAISONAI_REQUIRE_DOCKER_POOL=1 but the docker pool cannot run: {reason}")
        pytest.skip(f"docker pool not usable here: {reason}")
    where = Path(tempfile.mkdtemp(prefix="pxp-", dir="/tmp"))  # short: socket paths are limited
    try:
        _up(where)
        yield where
    finally:
        subprocess.run(["bash", str(SCRIPT), "down", str(where)], timeout=300)


def _hosts(where: Path) -> list[str]:
    return [f"unix://{where}/d{i}/docker.sock" for i in range(1, ENGINES + 1)]


@pytest.fixture
def pool(engines: Path) -> Iterator[DockerCompute]:
    """A pool over the engines; whatever is left of its instances afterwards is removed."""
    provider = DockerCompute(hosts=_hosts(engines), image=IMAGE)
    yield provider
    for url in _hosts(engines):
        api = DockerCompute(base_url=url).api
        for row in api.containers(all=True, filters=_ours()):
            remove_container(api, row["Id"])  # gone meanwhile, or being removed: waited for


def _ours() -> dict[str, list[str]]:
    """The label filter of this test's instances: the engines are shared with other runs (and
    benchmarks), whose containers are neither counted nor removed here."""
    return {"label": [f"{LABEL_PROVIDER}=docker", f"{LABEL_HOME}={home_tag()}"]}


def _counts(hosts: list[str]) -> dict[str, int]:
    return {u: len(DockerCompute(base_url=u).api.containers(all=True, filters=_ours())) for u in hosts}


def _provision(pool: DockerCompute, n: int) -> list[tuple[str, str]]:
    """``n`` instances provisioned at once: (instance id, host) each."""

    async def all_at_once() -> list[tuple[str, str]]:
        import anyio

        made: list[tuple[str, str]] = []

        async def one() -> None:
            info = await pool.provision()
            made.append((info.instance_id, info.metadata["host"]))

        async with anyio.create_task_group() as tg:
            for _ in range(n):
                tg.start_soon(one)
        return made

    return _portal.call(all_at_once)


# ---- the conformance suite across the pool ----------------------------------------------------


@pytest.fixture(scope="module")
def ctx(engines: Path) -> Iterator[Context]:
    spec = {"type": "docker", "hosts": _hosts(engines), "image": IMAGE}
    provider = DockerCompute(hosts=_hosts(engines), image=IMAGE)
    info = _portal.call(provider.provision)
    try:
        yield Context(provider, info.instance_id, provider_expr=f"resolve_compute({spec!r})")
    finally:
        _portal.call(provider.shutdown, info.instance_id)


@pytest.mark.parametrize("check", POOL_CHECKS)
def test_conformance_across_the_pool(ctx: Context, check: str) -> None:
    run_check(TARGETS["docker"], ctx, check)  # a docker variant: expected to pass as docker does


# ---- placement, options, listing and stopping from another process ----------------------------


def test_options_rebuild_the_pool_and_refuse_what_cannot_work(engines: Path) -> None:
    pool = DockerCompute(hosts=_hosts(engines), image=IMAGE)
    assert pool.unavailable_reason() is None
    again = DockerCompute.from_options(pool.options)
    assert [h.url for h in again.options.hosts] == _hosts(engines)
    with pytest.raises(ConfigError, match="not ssh://"):
        DockerCompute(hosts=["ssh://-oProxyCommand=x"])  # ssh hosts: test_docker_pool_ssh.py
    with pytest.raises(ConfigError, match="once"):
        DockerCompute(hosts=[_hosts(engines)[0], _hosts(engines)[0]])


def test_tcp_with_tls_and_unix_engines_in_one_pool(engines: Path) -> None:
    tcp = (engines / "d2" / "tcp").read_text().strip()
    hosts = [DockerHost(url=_hosts(engines)[0]), DockerHost(url=tcp, tls=str(engines / "tls" / "client"))]
    pool = DockerCompute(hosts=hosts, image=IMAGE)
    made = _provision(pool, 2)
    try:
        assert sorted(host for _, host in made) == sorted(h.url for h in hosts)
        for instance_id, _ in made:
            assert _portal.call(pool.execute, instance_id, "echo ok").stdout == "ok\n"
        rebuilt = DockerCompute.from_options(pool.options)  # the cert directory is in its options
        assert {i for i, _ in made} <= {i.instance_id for i in _portal.call(rebuilt.list_instances)}
    finally:
        for instance_id, _ in made:
            assert _portal.call(pool.shutdown, instance_id)
    with pytest.raises(ConfigError, match="tcp"):
        DockerCompute(hosts=[DockerHost(url=_hosts(engines)[0], tls="/nonexistent")])


def test_placement_spreads_instances(pool: DockerCompute, engines: Path) -> None:
    made = _provision(pool, 2 * ENGINES)
    counts = _counts(_hosts(engines))
    assert max(counts.values()) - min(counts.values()) <= 1, counts
    assert sum(counts.values()) >= len(made)
    for instance_id, host in made:
        assert _portal.call(pool.get_status, instance_id).metadata["host"] == host


def test_list_and_stop_from_another_process(pool: DockerCompute, engines: Path) -> None:
    ids = sorted(i for i, _ in _provision(pool, ENGINES))
    body = (
        "import json, sys\n"
        "from praisonai.compute import inventory\n"
        "ids = json.loads(sys.argv[1])\n"
        "seen = {f.instance_id: f.status for f in inventory.ps().instances if f.instance_id in ids}\n"
        "out = inventory.stop(ids)\n"
        "print(json.dumps([seen, sorted(f.instance_id for f in out.stopped), list(out.failed)]))\n"
    )
    child = subprocess.run(
        [sys.executable, "-c", body, json.dumps(ids)], capture_output=True, text=True, timeout=120
    )
    assert child.returncode == 0, child.stderr
    seen, stopped, failed = json.loads(child.stdout)
    assert seen == dict.fromkeys(ids, "running") and stopped == ids and failed == []
    assert not [i for i in _portal.call(pool.list_instances) if i.instance_id in ids]
    assert sum(_counts(_hosts(engines)).values()) == 0


# ---- one engine killed mid-run ----------------------------------------------------------------


def test_a_killed_engine_is_reported_per_instance(pool: DockerCompute, engines: Path) -> None:
    made = _provision(pool, ENGINES)
    assert len({host for _, host in made}) == ENGINES, made  # one on each (they were empty)
    (dead_id, dead_host), *alive = made
    dead_dir = Path(dead_host.removeprefix("unix://")).parent
    os.kill(int((dead_dir / "docker.pid").read_text()), signal.SIGKILL)
    try:
        for provider in (pool, DockerCompute.from_options(pool.options)):  # this process, and a fresh one
            with pytest.raises(ProviderUnavailableError, match=dead_host):
                _portal.call(provider.get_status, dead_id)
            for instance_id, _ in alive:
                assert _portal.call(provider.execute, instance_id, "echo ok").stdout == "ok\n"
        listed = {i.instance_id: i for i in _portal.call(pool.list_instances)}
        assert listed[dead_id].status is InstanceStatus.ERROR and listed[dead_id].metadata["unreachable"]
        assert all(listed[i].status is InstanceStatus.RUNNING for i, _ in alive)
        placed = collections.Counter(host for _, host in _provision(pool, 2))
        assert dead_host not in placed
    finally:
        _up(engines)  # the killed engine restarts on its data root
    # What the dead engine ran is found again and removed; nothing is left on any engine.
    for instance_id, _ in made:
        _portal.call(pool.shutdown, instance_id)
    for instance_id in [i.instance_id for i in _portal.call(pool.list_instances)]:
        _portal.call(pool.shutdown, instance_id)
    assert sum(_counts(_hosts(engines)).values()) == 0
    with pytest.raises(InstanceNotFoundError):
        _portal.call(pool.get_status, dead_id)
    left = subprocess.run(["ps", "-eo", "args="], capture_output=True, text=True).stdout
    assert not [line for line in left.splitlines() if "containerd-shim" in line and str(dead_dir) in line]


def test_a_handed_off_instance_is_adopted_through_another_pool(engines: Path) -> None:
    """The main channel across a pool, raw over a unix engine and through docker-py over TLS."""
    from praisonai.compute.providers.docker._attach import AttachTransport

    tcp = (engines / "d2" / "tcp").read_text().strip()
    hosts = [DockerHost(url=_hosts(engines)[0]), DockerHost(url=tcp, tls=str(engines / "tls" / "client"))]
    pool = DockerCompute(hosts=hosts, image=IMAGE)
    made = _provision(pool, 2)
    try:
        other = DockerCompute.from_options(pool.options)
        for instance_id, _ in made:
            key = pool.handoff_key(instance_id)
            assert key is not None and pool.handoff_key(instance_id) is None
            other.adopt(instance_id, key)
            assert _portal.call(other.execute, instance_id, "echo mine").stdout == "mine\n"
            assert isinstance(other._channels.peek(instance_id).transport, AttachTransport)
    finally:
        for instance_id, _ in made:
            assert _portal.call(pool.shutdown, instance_id)
