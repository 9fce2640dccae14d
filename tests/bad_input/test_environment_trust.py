"""A repository's environment.yaml is untrusted input: a file (or ``.praisonai`` directory) linked
from outside the repository is refused unread, no error quotes what a file says, and mounts that
hand an instance the host (the engine's socket, ``/``, system directories) need the caller's own
``allow_host_mounts``. Each refusal is one sentence naming the file, the key and the way out."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from praisonai import Sandbox, _portal
from praisonai._errors import ConfigError, EnvironmentFileError
from praisonai._ledger import Ledger, home_tag
from praisonai.compute.providers.docker import DockerCompute
from praisonai.sandbox.environment import effective_config
from praisonai.sandbox.provisioning import plan

SECRET = "supersecret-line-of-another-file"


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from praisonai.cli import main; main()", *args],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, cwd=cwd,
    )  # fmt: skip


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository (``.git``) next to a directory outside it that holds a secret file."""
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    outside = tmp_path / "outside"
    (outside / ".praisonai").mkdir(parents=True)
    (outside / "credentials").write_text(f"{SECRET}\n")
    (outside / ".praisonai" / "environment.yaml").write_text(f"env:\n  TOKEN: {SECRET}\nimage: [x]\n")
    return tmp_path / "repo"


def _link_file_out(repo: Path) -> None:
    (repo / ".praisonai").mkdir()
    (repo / ".praisonai" / "environment.yaml").symlink_to(repo.parent / "outside" / "credentials")


def _link_dir_out(repo: Path) -> None:
    (repo / ".praisonai").symlink_to(repo.parent / "outside" / ".praisonai")


def _link_relative_out(repo: Path) -> None:
    (repo / ".praisonai").mkdir()
    (repo / ".praisonai" / "environment.yaml").symlink_to("../../outside/credentials")


LINKS_OUT: list[tuple[str, Callable[[Path], None]]] = [
    ("the file, to a file outside", _link_file_out),
    ("the .praisonai directory, to one outside", _link_dir_out),
    ("the file, by a relative link out", _link_relative_out),
]


@pytest.mark.parametrize(("case", "make"), LINKS_OUT, ids=[c for c, _ in LINKS_OUT])
def test_an_environment_file_linked_from_outside_the_repository_is_refused_unread(
    home: Path, repo: Path, case: str, make: Callable[[Path], None]
) -> None:
    make(repo)
    r = cli(repo, "env", "validate")
    assert r.returncode == 2, r.stderr
    assert "outside the repository" in r.stderr and "environment.yaml" in r.stderr
    assert SECRET not in r.stderr + r.stdout and len(r.stderr.strip().splitlines()) == 1
    with pytest.raises(EnvironmentFileError, match="outside the repository") as caught:
        effective_config(start=repo)
    assert SECRET not in str(caught.value)


def test_a_link_that_stays_inside_the_repository_is_read(repo: Path) -> None:
    (repo / "shared").mkdir()
    (repo / "shared" / "env.yaml").write_text("image: python:3.12\n")
    (repo / ".praisonai").mkdir()
    (repo / ".praisonai" / "environment.yaml").symlink_to("../shared/env.yaml")
    assert effective_config(start=repo).config.image == "python:3.12"


# What a file says never appears in an error about it, whatever the problem.
CONTENT_CASES = [
    ("a top-level string", f"{SECRET}\n"),
    ("a string where a list is", f"setup: {{{SECRET}: 1}}\nimage: ['{SECRET}']\n"),
    ("a string where a boolean is", f"capture: '{SECRET}'\n"),
    ("an undefined alias", f"image: *{SECRET}\n"),
    ("an unknown tag", f"image: !{SECRET} x\n"),
    ("a broken flow mapping", f"image: {{{SECRET}\n"),
]


@pytest.mark.parametrize(("case", "text"), CONTENT_CASES, ids=[c for c, _ in CONTENT_CASES])
def test_no_error_quotes_what_the_file_says(repo: Path, case: str, text: str) -> None:
    (repo / ".praisonai").mkdir()
    (repo / ".praisonai" / "environment.yaml").write_text(text)
    with pytest.raises(EnvironmentFileError) as caught:
        effective_config(start=repo)
    assert "environment.yaml:" in str(caught.value)
    assert SECRET not in str(caught.value)


def _unix_socket(folder: Path) -> Iterator[str]:
    path = folder / "engine.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    try:
        yield str(path)
    finally:
        server.close()


@pytest.fixture
def host_paths(home: Path, tmp_path: Path) -> Iterator[dict[str, str]]:
    """Host paths a mount must not reach without the opt-in, some of them through links."""
    (tmp_path / "to-etc").symlink_to("/etc")
    sock = _unix_socket(tmp_path)
    paths = {"sock": next(sock), "etc-link": str(tmp_path / "to-etc")}
    (tmp_path / "to-sock").symlink_to(paths["sock"])
    paths["sock-link"] = str(tmp_path / "to-sock")
    home.mkdir(parents=True, exist_ok=True)
    paths["praisonai-home"] = str(home / "local")  # every local instance's record and env
    yield paths
    next(sock, None)


REFUSED_MOUNTS = [
    ("/var/run/docker.sock", "unix socket"),
    ("/run/docker.sock", "unix socket"),
    ("/run/containerd/containerd.sock", "unix socket"),
    ("{sock}", "unix socket"),
    ("{sock-link}", "unix socket"),
    ("/", "whole filesystem"),
    ("/etc", "host system directory"),
    ("/etc/ssl", "host system directory"),
    ("{etc-link}", "host system directory"),
    ("/var", "host system directory"),
    ("/proc", "host system directory"),
    ("/sys", "host system directory"),
    ("/dev", "host system directory"),
    ("/usr", "host system directory"),
    ("/root", "host system directory"),
    ("/lib", "host system directory"),
    ("/boot", "host system directory"),
    ("{praisonai-home}", "the praisonai home"),
]


@pytest.mark.parametrize(("source", "why"), REFUSED_MOUNTS, ids=[s for s, _ in REFUSED_MOUNTS])
def test_a_mount_that_hands_over_the_host_is_refused_unless_the_caller_allows_it(
    home: Path, repo: Path, host_paths: dict[str, str], source: str, why: str
) -> None:
    host = source.format(**host_paths)
    (repo / ".praisonai").mkdir()
    (repo / ".praisonai" / "environment.yaml").write_text(f'mount_paths: ["{host}:/mnt/x"]\n')
    r = cli(repo, "env", "validate")
    assert r.returncode == 2, r.stderr
    message = r.stderr.strip()
    assert len(message.splitlines()) == 1 and "Traceback" not in message
    assert ".praisonai/environment.yaml: mount_paths[0]" in message and why in message
    assert "--allow-host-mounts" in message
    assert cli(repo, "env", "validate", "--allow-host-mounts").returncode == 0
    # the Python API: given directly, the caller's own mounts need the same opt-in
    with pytest.raises(ConfigError, match="allow_host_mounts=True") as caught:
        plan("local", mount_paths=[f"{host}:/mnt/x"], environment=False)
    assert why in str(caught.value)
    allowed = plan("local", mount_paths=[f"{host}:/mnt/x"], allow_host_mounts=True, environment=False)
    assert allowed.config.mount_paths == [f"{host}:/mnt/x"]
    # the file's mounts are allowed only by the caller, never by the file itself
    with pytest.raises(EnvironmentFileError, match="mount_paths"):
        effective_config(start=repo)
    assert effective_config({"allow_host_mounts": True}, start=repo).config.mount_paths


def test_the_file_cannot_allow_host_mounts_itself(repo: Path) -> None:
    (repo / ".praisonai").mkdir()
    (repo / ".praisonai" / "environment.yaml").write_text('allow_host_mounts: true\nmount_paths: ["/:/h"]\n')
    with pytest.raises(EnvironmentFileError, match="unknown key"):
        effective_config(start=repo)


def test_ordinary_mounts_stay_allowed(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    assert plan("local", mount_paths=[f"{tmp_path}/data:/data:ro"], environment=False).config.mount_paths


@pytest.mark.usefixtures("docker_ok")
def test_the_engine_socket_is_refused_before_any_container_is_made(home: Path, repo: Path) -> None:
    def containers() -> list[str]:
        return subprocess.run(
            ["docker", "ps", "-aq", "--filter", f"label=praisonai.home={home_tag()}"],
            capture_output=True, text=True, check=False,
        ).stdout.split()  # fmt: skip

    socket_mount = "/var/run/docker.sock:/var/run/docker.sock"
    (repo / ".praisonai").mkdir()
    (repo / ".praisonai" / "environment.yaml").write_text(
        f'backend: docker\nmount_paths: ["{socket_mount}"]\n'
    )
    try:
        r = cli(repo, "sandbox", "run", "--", "ls", "-l", "/var/run/docker.sock")
        assert r.returncode == 125 and "unix socket" in r.stderr and "srw" not in r.stdout, (
            r.stdout + r.stderr
        )
        with pytest.raises(ConfigError, match="unix socket"):
            Sandbox.create("docker", mount_paths=[socket_mount], environment=False)
        with pytest.raises(ConfigError, match="unix socket"):
            _portal.call(lambda: DockerCompute().provision({"mount_paths": [socket_mount]}))
        assert containers() == [] and Ledger.default().entries() == []
    finally:
        for container in containers():
            subprocess.run(["docker", "rm", "-f", container], capture_output=True, check=False)
    assert os.path.exists("/var/run/docker.sock")
