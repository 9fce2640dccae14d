"""``repo=URL[@REF]``: a real ``git clone`` inside the instance, from a repository served over
HTTP behind Basic auth on loopback (local instances) or from a bare repository inside the
instance (docker). The token is searched for everywhere it must not be: every process's
command line during the clone, the clone's ``.git/config``, the output, the errors."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from githttp import GitHTTP, make_bare
from kit import network_gateway

from praisonai import Sandbox
from praisonai._errors import ConfigError, ExecError
from praisonai.compute.providers.docker._client import container_name
from praisonai.compute.providers.local import LocalCompute

TOKEN = "tok-9c1e5a77d2b84f6e"
TOKEN_ENV = "PRAISONAI_TEST_REPO_TOKEN"


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[GitHTTP]:
    make_bare(tmp_path)
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    with GitHTTP(tmp_path, TOKEN, delay=0.05) as server:
        yield server


@pytest.fixture
def local() -> Iterator[Sandbox]:
    with Sandbox.create(LocalCompute(), environment=False) as sb:
        yield sb


def command_lines() -> list[bytes]:
    seen = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):  # gone meanwhile
                seen.append((entry / "cmdline").read_bytes())
    return seen


def test_the_clone_gets_the_token_and_nothing_shows_it(served: GitHTTP, local: Sandbox) -> None:
    lines: list[bytes] = []
    cloning = threading.Event()

    def watch() -> None:
        while not cloning.is_set():
            lines.extend(line for line in command_lines() if b"git" in line)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        local.clone_repo(f"{served.url}@feature", token_env=TOKEN_ENV)
    finally:
        cloning.set()
        watcher.join()
    assert served.authorized > 0  # the token reached git through its credential helper
    assert any(b"clone" in line for line in lines)  # the watch saw the clone running
    assert not [line for line in lines if TOKEN.encode() in line]
    assert local.exec("cat feature.txt README").stdout == "feature\nv1\n"
    assert TOKEN not in local.exec("cat .git/config; git config --list --show-origin").stdout
    assert local.exec("git rev-parse --abbrev-ref HEAD").stdout.strip() == "feature"
    local.write_file("app.py", "print(2)\n")
    assert "-print(1)\n+print(2)\n" in local.diff()


def test_a_tag_checks_out_and_an_unknown_ref_is_one_sentence(served: GitHTTP) -> None:
    with Sandbox.create(LocalCompute(), environment=False) as sb:
        sb.clone_repo(f"{served.url}@v1", token_env=TOKEN_ENV)
        assert sb.exec("ls").stdout.split() == ["README"]
    with Sandbox.create(LocalCompute(), environment=False) as sb, pytest.raises(ConfigError) as caught:
        sb.clone_repo(f"{served.url}@no-such-branch", token_env=TOKEN_ENV)
    said = str(caught.value)
    assert said.startswith(f"the repository {served.url} has no branch, tag or commit 'no-such-branch'; ")


def test_a_refused_token_fails_without_showing_it(served: GitHTTP, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TOKEN_ENV, "wrong-" + TOKEN)
    with Sandbox.create(LocalCompute(), environment=False) as sb, pytest.raises(ExecError) as caught:
        sb.clone_repo(served.url, token_env=TOKEN_ENV)
    said = str(caught.value)
    assert said.startswith(f"git clone of {served.url} failed: ") and "\n" not in said
    assert TOKEN not in said and served.authorized == 0


def test_docker_clones_a_ref_inside_the_instance(docker_ok: None, tmp_path: Path) -> None:
    bare = make_bare(tmp_path)
    with Sandbox.create("docker", environment=False) as sb:
        sb.upload(bare, "/srv/repo.git")
        sb.clone_repo("/srv/repo.git@v1")
        assert sb.exec("ls").stdout.split() == ["README"]
        sb.write_file("README", "v2\n")
        assert "-v1\n+v2\n" in sb.diff()
        with pytest.raises(ExecError, match=r"destination path '\.' already exists"):
            sb.clone_repo("/srv/repo.git")
    assert os.path.isdir(bare)


def bridge_gateway() -> str:
    """The host's address on docker's default bridge, where a container reaches a host server."""
    said = subprocess.run(
        ["docker", "network", "inspect", "bridge", "--format", "{{json .IPAM}}"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return network_gateway(json.loads(said.stdout))


def test_docker_clone_leaves_the_token_nowhere_in_the_container(
    docker_ok: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_bare(tmp_path)
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    try:
        served = GitHTTP(tmp_path, TOKEN, delay=0.05, host=bridge_gateway())
    except OSError as exc:
        pytest.skip(f"this host has no address on docker's bridge to serve from: {exc}")
    with served, Sandbox.create("docker", environment=False) as sb:
        watch = "while :; do cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '; echo; done >/tmp/seen"
        watcher = sb.start(watch)
        sb.clone_repo(f"{served.url}@feature", token_env=TOKEN_ENV)
        watcher.kill()
        seen = sb.read_file("/tmp/seen").decode(errors="replace")
        assert "clone" in seen and TOKEN not in seen  # the watch saw the clone, never the token
        assert served.authorized > 0 and sb.exec("cat feature.txt").stdout == "feature\n"
        found = sb.exec(f"grep -rl {TOKEN} / --exclude-dir=proc --exclude-dir=sys 2>/dev/null; true")
        assert found.stdout == ""  # .git/config, the helper's spool, logs: nowhere on disk
        inspected = subprocess.run(
            ["docker", "inspect", container_name(sb.id)], capture_output=True, text=True
        )
        assert inspected.returncode == 0 and TOKEN not in inspected.stdout
