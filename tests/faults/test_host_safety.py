"""Nothing outside an instance is touched, and a provision that fails leaves nothing stuck.

Instance ids become host paths (local), container names (docker) and remote paths (ssh), so every
entry point must refuse what is not an id before acting. Each test plants a sentinel where a bad id
points — a directory shaped like an instance, with a live process group listed in it, or a
container named like one — and checks it survives every entry point, the CLI and the ledger.

A provision against an engine or host that does not answer leaves a ``failed`` ledger row that
``stop`` and ``gc`` clear, and ``gc``'s exit code agrees with its tally.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

import praisonai
from praisonai._errors import InvalidInstanceIdError, ProviderUnavailableError
from praisonai._ledger import Ledger
from praisonai.compute.base import ComputeProvider
from praisonai.compute.lifecycle import owner_tag
from praisonai.compute.providers.docker import DEFAULT_IMAGE, DockerCompute
from praisonai.compute.providers.local import LocalCompute
from praisonai.compute.providers.ssh import SSHCompute
from praisonai.compute.testing.sshd import SSHServer, _free_port
from praisonai.sandbox import Sandbox

_REPO = Path(praisonai.__file__).parents[1]
_NO_DOCKER = "unix:///nonexistent/docker.sock"

Call = Callable[[ComputeProvider, str, Path], Awaitable[Any]]

#: Every public method that takes an instance id, each asked to do harm with it.
ENTRY_POINTS: dict[str, Call] = {
    "shutdown": lambda p, i, tmp: p.shutdown(i),
    "get_status": lambda p, i, tmp: p.get_status(i),
    "execute": lambda p, i, tmp: p.execute(i, "touch pwned"),
    "read_file": lambda p, i, tmp: p.read_file(i, "file"),
    "write_file": lambda p, i, tmp: p.write_file(i, "file", b"overwritten"),
    "upload_file": lambda p, i, tmp: p.upload_file(i, tmp / "upload", "pwned"),
    "download_file": lambda p, i, tmp: p.download_file(i, "file", tmp / "downloaded"),
    "start_process": lambda p, i, tmp: p.processes.start(i, "touch pwned"),
    "list_processes": lambda p, i, tmp: p.processes.list(i),
    "get_process": lambda p, i, tmp: p.processes.get(i, "p0123456789ab"),
    "read_process_output": lambda p, i, tmp: p.processes.output(i, "p0123456789ab"),
    "wait_process": lambda p, i, tmp: p.processes.wait(i, "p0123456789ab", 1),
    "kill_process": lambda p, i, tmp: p.processes.kill(i, "p0123456789ab"),
    "open_session": lambda p, i, tmp: p.open_session(i),
    "bind_env": lambda p, i, tmp: p.processes.bind_env(i, {"PWNED": "1"}),
    "Sandbox.connect": lambda p, i, tmp: anyio.to_thread.run_sync(Sandbox.connect, i, p),
}


def refuses_everywhere(provider: ComputeProvider, bad_id: str, tmp: Path) -> None:
    """Every entry point raises InvalidInstanceIdError naming the expected form, and no more."""
    (tmp / "upload").write_text("payload")
    for name, call in ENTRY_POINTS.items():

        async def attempt(call: Call = call) -> None:
            await call(provider, bad_id, tmp)

        with pytest.raises(InvalidInstanceIdError, match="_<12 hex digits>") as caught:
            anyio.run(attempt)
        assert repr(bad_id) in str(caught.value), name
    assert not (tmp / "downloaded").exists()


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# ---- local -------------------------------------------------------------------------------------


@dataclass
class Victim:
    """A host directory shaped like a local instance, with a live process group listed in it."""

    path: Path
    process: subprocess.Popen[bytes]
    before: dict[str, bytes]

    def intact(self) -> bool:
        return self.process.poll() is None and snapshot(self.path) == self.before


@pytest.fixture
def victim(home: Path) -> Iterator[Victim]:
    path = home.parent / "victim"  # "../../victim" from the instances root, home/local
    (path / "workspace").mkdir(parents=True)
    (path / "pgids").mkdir()
    (path / "spool").mkdir()
    (path / "workspace" / "file").write_text("precious")
    record = {
        "instance_id": "local_0123456789ab", "working_dir": "", "env": {}, "isolate": False,
        "network": "unrestricted", "created_at": time.time(), "labels": {},
    }  # fmt: skip
    (path / "instance.json").write_text(json.dumps(record))
    process = subprocess.Popen(["sleep", "300"], start_new_session=True)
    (path / "pgids" / str(process.pid)).touch()
    try:
        yield Victim(path, process, snapshot(path))
    finally:
        process.kill()
        process.wait()


@pytest.mark.parametrize(
    "shape", ["absolute", "relative", "id then traversal", "another provider's id", "trailing newline"]
)
def test_local_refuses_ids_that_point_outside_its_root(victim: Victim, tmp_path: Path, shape: str) -> None:
    bad_id = {
        "absolute": str(victim.path),
        "relative": "../../victim",
        "id then traversal": "local_0123456789ab/../../../victim",
        "another provider's id": "docker_0123456789ab",
        "trailing newline": "local_0123456789ab\n",
    }[shape]
    refuses_everywhere(LocalCompute(), bad_id, tmp_path)
    assert victim.intact()


@pytest.mark.usefixtures("home")
def test_connect_without_a_provider_refuses_a_path(victim: Victim) -> None:
    with pytest.raises(InvalidInstanceIdError, match="ids look like <provider>_<12 hex digits>"):
        Sandbox.connect(str(victim.path))
    assert victim.intact()


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DOCKER_HOST": _NO_DOCKER}  # see only this test's local instances
    return subprocess.run(
        [sys.executable, "-c", "from praisonai.cli import main; main()", *args],
        capture_output=True, text=True, timeout=120, cwd=_REPO, env=env,
    )  # fmt: skip


@pytest.mark.usefixtures("home")
@pytest.mark.parametrize("command", [("compute", "stop", "--all"), ("compute", "gc"), ("compute", "ps")])
def test_a_planted_ledger_row_never_reaches_a_provider(victim: Victim, command: tuple[str, ...]) -> None:
    """A ledger row whose id is a host path (a damaged or hostile file) is reported and skipped."""
    Ledger.default().record(str(victim.path), "local", {}, "someone@elsewhere:1", 1.0)
    Ledger.default().mark(str(victim.path), "running")
    r = cli(*command)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert f"({str(victim.path)!r}) of the ledger" in r.stderr and "not an instance id" in r.stderr
    assert victim.intact() and Ledger.default().scan()[0][0].instance_id == str(victim.path)


@pytest.mark.usefixtures("home")
def test_stop_refuses_a_path_before_stopping_anything(victim: Victim) -> None:
    instance = anyio.run(LocalCompute().provision).instance_id
    try:
        r = cli("compute", "stop", instance, str(victim.path))
        assert r.returncode == 2 and r.stdout == ""
        assert r.stderr.strip() == (
            f"error: {str(victim.path)!r} is not an instance id: ids look like <provider>_<12 hex digits>, "
            "e.g. docker_3f9a1c2b7d4e"
        )
        assert victim.intact() and anyio.run(LocalCompute().get_status, instance)
    finally:
        anyio.run(LocalCompute().shutdown, instance)


# ---- docker ------------------------------------------------------------------------------------


@pytest.fixture
def victim_container(docker_ok: None) -> Iterator[str]:
    """A running container named as ``container_name`` would name an instance with a bad id."""
    suffix = f"victim-{secrets.token_hex(4)}"
    subprocess.run(
        ["docker", "run", "-d", "--name", f"praisonai_{suffix}", DEFAULT_IMAGE, "sleep", "300"],
        check=True, capture_output=True,
    )  # fmt: skip
    try:
        yield suffix
    finally:
        subprocess.run(["docker", "rm", "-f", "-v", f"praisonai_{suffix}"], capture_output=True)


@pytest.mark.usefixtures("home")
def test_docker_refuses_a_name_that_is_not_an_id(victim_container: str, tmp_path: Path) -> None:
    refuses_everywhere(DockerCompute(), victim_container, tmp_path)
    name = f"praisonai_{victim_container}"
    state = subprocess.run(
        ["docker", "inspect", "-f", "{{.State.Running}}", name], capture_output=True, text=True
    )
    assert state.stdout.strip() == "true"
    found = subprocess.run(
        ["docker", "exec", name, "find", "/", "-xdev", "-name", "pwned"], capture_output=True
    )
    assert found.stdout == b""


# ---- ssh ---------------------------------------------------------------------------------------


@pytest.mark.usefixtures("home")
@pytest.mark.parametrize("shape", ["relative", "absolute"])
def test_ssh_refuses_ids_that_point_outside_its_root(sshd: SSHServer, tmp_path: Path, shape: str) -> None:
    path = sshd.home / f"victim-{shape}"  # "../../victim-…" from ~/.praisonai/instances
    (path / "workspace").mkdir(parents=True)
    (path / "workspace" / "file").write_text("precious")
    before = snapshot(path)
    try:
        bad_id = f"../../{path.name}" if shape == "relative" else str(path)
        refuses_everywhere(SSHCompute(**sshd.connect_kwargs()), bad_id, tmp_path)
        assert snapshot(path) == before
    finally:
        subprocess.run(["rm", "-rf", str(path)], check=True)


# ---- a provision that fails before its instance exists (defect 16) ----------------------------


def unreachable_docker() -> DockerCompute:
    return DockerCompute(base_url=_NO_DOCKER)


def unreachable_ssh(tmp: Path) -> SSHCompute:
    return SSHCompute(host="127.0.0.1", port=_free_port(), user="nobody", known_hosts=str(tmp / "kh"))


def failed_provision(make: Callable[[], ComputeProvider]) -> str:
    """Provision against an engine or host that does not answer: refused before it took anything,
    so no row is left (issue 26, item 15). Then the row a provision whose outcome is unknown
    leaves (a timeout after the request was sent): ``failed``, under the same provider's options.
    Returns its id."""
    provider = make()
    with pytest.raises(ProviderUnavailableError):
        anyio.run(provider.provision)
    assert Ledger.default().entries() == []
    instance_id = f"{provider.name}_00000000f00d"
    ledger = Ledger.default()
    ledger.record(instance_id, provider.name, provider.options.to_record(), owner_tag(), time.time())
    ledger.mark(instance_id, "failed")
    return instance_id


@pytest.mark.usefixtures("home")
@pytest.mark.parametrize("provider", ["docker", "ssh"])
def test_stop_clears_the_row_of_a_provision_that_never_reached_its_engine(
    provider: str, tmp_path: Path
) -> None:
    instance_id = failed_provision(
        unreachable_docker if provider == "docker" else lambda: unreachable_ssh(tmp_path)
    )
    r = cli("compute", "stop", instance_id)
    assert (r.returncode, r.stdout) == (0, "1 stopped, 0 failed\n"), r.stderr
    assert f"forgot {instance_id}: its provision failed and its provider cannot be reached" in r.stderr
    assert Ledger.default().entries() == []


@pytest.mark.usefixtures("home")
@pytest.mark.parametrize("provider", ["docker", "ssh"])
def test_gc_clears_the_row_of_a_failed_provision_and_its_exit_code_agrees(
    provider: str, tmp_path: Path
) -> None:
    instance_id = failed_provision(
        unreachable_docker if provider == "docker" else lambda: unreachable_ssh(tmp_path)
    )
    r = cli("compute", "gc")
    assert r.returncode == 0, r.stderr
    assert f"forgot {instance_id} ({provider}): its provision failed" in r.stdout
    assert r.stdout.endswith("0 removed, 1 forgotten, 0 failed\n")
    assert Ledger.default().entries() == []
    again = cli("compute", "gc")
    assert (again.returncode, again.stdout) == (0, "0 removed, 0 forgotten, 0 failed\n")


@pytest.mark.usefixtures("home")
def test_gc_clears_a_row_left_in_provisioning_by_a_dead_creator_whose_engine_is_gone() -> None:
    """What older versions left behind: ``provisioning``, its creator dead, the engine unreachable."""
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    owner = f"{owner_tag().rpartition(':')[0]}:{dead.stdout.strip()}"
    Ledger.default().record("docker_00000000dead", "docker", {"base_url": _NO_DOCKER}, owner, time.time())
    r = cli("compute", "gc")
    assert r.returncode == 0, r.stderr
    assert "forgot docker_00000000dead (docker): its creator" in r.stdout and "died mid-provision" in r.stdout
    assert r.stdout.endswith("0 removed, 1 forgotten, 0 failed\n")


@pytest.mark.usefixtures("home")
def test_gc_counts_what_it_could_not_check_as_failed() -> None:
    Ledger.default().record("nope_0123456789ab", "nope", {}, "someone@elsewhere:1", time.time())
    r = cli("compute", "gc")
    assert (r.returncode, r.stdout) == (1, "0 removed, 0 forgotten, 1 failed\n")
    dry = cli("compute", "gc", "--dry-run")
    assert (dry.returncode, dry.stdout) == (1, "would remove 0, would forget 0, 1 failed\n")


@pytest.mark.usefixtures("home", "docker_ok")
def test_gc_removes_the_container_of_a_failed_provision_once_its_engine_answers() -> None:
    """The engine came back: the failed provision's container is there, and gc removes it."""
    provider = DockerCompute()
    instance_id = anyio.run(provider.provision).instance_id
    try:
        Ledger.default().mark(instance_id, "failed")  # as if its setup failed and removal could not run
        r = cli_with_docker("compute", "gc")
        assert r.returncode == 0, r.stderr
        assert f"removed {instance_id} (docker): its provision failed" in r.stdout
        with pytest.raises(LookupError):
            anyio.run(provider.get_status, instance_id)
    finally:
        anyio.run(provider.shutdown, instance_id)


def cli_with_docker(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from praisonai.cli import main; main()", *args],
        capture_output=True, text=True, timeout=120, cwd=_REPO,
    )  # fmt: skip
