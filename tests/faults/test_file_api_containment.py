"""The file API (list, stat, exists, remove, rename, mkdir) against an instance that plants links
out of its workspace: on local (plain and under bubblewrap) and ssh, where the instance is a
directory on a host, nothing is listed, stated, removed, renamed or made outside it; a link is
acted on as a link. Docker's instance is its container: a link to /etc there is the container's."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kit import SECRET, Instance, provisioned
from kit import run_ok as run

from praisonai import _portal
from praisonai._errors import PathNotFoundError, PathOutsideWorkspaceError
from praisonai.compute.providers.local import LocalCompute

RACE_SECONDS = 3.0


@pytest.fixture(params=["plain", pytest.param("bwrap", marks=pytest.mark.bwrap), "ssh"])
def hosted(request: pytest.FixtureRequest) -> Iterator[Instance]:
    """An instance that is a directory on a host (the test's own: the host dir below is reachable)."""
    if request.param == "ssh":
        from praisonai.compute.providers.ssh import SSHCompute

        yield from provisioned(SSHCompute(**request.getfixturevalue("sshd").connect_kwargs()))
        return
    if request.param == "bwrap":
        request.getfixturevalue("bwrap_ok")
    yield from provisioned(LocalCompute(isolate=request.param == "bwrap"))


def call(instance: Instance, method: str, *args: object, **kwargs: object) -> Any:
    """``provider.files.<method>(instance_id, ...)``."""
    provider, instance_id = instance
    return _portal.call(lambda: getattr(provider.files, method)(instance_id, *args, **kwargs))


def test_a_link_to_a_host_dir_is_reported_and_removed_as_a_link(hosted: Instance, host_dir: Path) -> None:
    run(hosted, f"ln -s {host_dir} out")
    entry = call(hosted, "stat", "out")
    assert (entry.type, entry.symlink_target) == ("symlink", str(host_dir))
    with pytest.raises((NotADirectoryError, PathOutsideWorkspaceError)):
        call(hosted, "list", "out")
    listed = call(hosted, "list", ".", depth=3)
    assert not [e for e in listed if "marker" in e.path], listed
    call(hosted, "remove", "out")
    assert (host_dir / "marker").read_bytes() == SECRET and not call(hosted, "exists", "out")


@pytest.mark.parametrize(
    "method, args",
    [
        ("stat", ("out/marker",)),
        ("remove", ("out/marker",)),
        ("rename", ("out/marker", "stolen")),
        ("rename", ("mine", "out/planted")),
        ("mkdir", ("out/made",)),
        ("list", ("out/",)),
    ],
)
def test_nothing_goes_through_a_planted_link(
    hosted: Instance, host_dir: Path, method: str, args: tuple[str, ...]
) -> None:
    run(hosted, f"ln -s {host_dir} out && printf mine > mine")
    with pytest.raises((PathOutsideWorkspaceError, NotADirectoryError)):
        call(hosted, method, *args)
    assert sorted(p.name for p in host_dir.iterdir()) == ["marker"]
    assert (host_dir / "marker").read_bytes() == SECRET


def test_rename_onto_a_link_to_a_host_dir_replaces_the_link(hosted: Instance, host_dir: Path) -> None:
    run(hosted, f"ln -s {host_dir} dest && printf moved > src")
    call(hosted, "rename", "src", "dest")
    provider, instance_id = hosted
    assert _portal.call(provider.read_file, instance_id, "dest") == b"moved"
    assert sorted(p.name for p in host_dir.iterdir()) == ["marker"]


def test_relative_escapes_and_bad_input_are_refused(hosted: Instance) -> None:
    for path in ("../x", "../../etc/passwd"):
        with pytest.raises(PathOutsideWorkspaceError):
            call(hosted, "stat", path)
    with pytest.raises(ValueError, match="depth"):
        call(hosted, "list", ".", depth=0)
    with pytest.raises(ValueError, match="working dir or / itself"):
        call(hosted, "remove", ".")
    for method, args in (("remove", ("/workspace",)), ("rename", ("/workspace", "x"))):
        with pytest.raises(ValueError, match="working dir itself"):
            call(hosted, method, *args)
    assert call(hosted, "exists", "/workspace")
    with pytest.raises(PathNotFoundError):
        call(hosted, "stat", "missing")


def test_local_remove_under_a_racing_link_swap_never_reaches_the_host(host_dir: Path) -> None:
    """The instance swaps its directory ``real`` for a link to the host dir in a loop while the
    file API lists and removes under it: the host dir is never touched."""
    for instance in provisioned(LocalCompute()):
        provider, instance_id = instance
        run(instance, "mkdir real")
        loop = f"while [ ! -e stop ]; do mv real aside; ln -s {host_dir} real; rm real; mv aside real; done"
        process = _portal.call(provider.processes.start, instance_id, loop)
        try:
            deadline, outcomes = time.monotonic() + RACE_SECONDS, set()
            while time.monotonic() < deadline:
                with contextlib.suppress(PathOutsideWorkspaceError, PathNotFoundError, NotADirectoryError):
                    call(instance, "remove", "real/marker")
                try:
                    call(instance, "list", "real")
                    outcomes.add("listed")
                except (PathOutsideWorkspaceError, PathNotFoundError, NotADirectoryError):
                    outcomes.add("refused")
        finally:
            run(instance, "touch stop")
            _portal.call(provider.processes.kill, instance_id, process.process_id)
        assert (host_dir / "marker").read_bytes() == SECRET
        assert outcomes == {"listed", "refused"}, "the race did not run both ways"


@pytest.mark.docker
def test_docker_link_to_etc_is_removed_as_a_link(docker_instance: Instance) -> None:
    run(docker_instance, "rm -rf etclink && ln -s /etc etclink")
    call(docker_instance, "remove", "etclink")
    assert call(docker_instance, "exists", "/etc/passwd")
    assert not call(docker_instance, "exists", "etclink")


def test_bad_input_is_one_sentence_before_anything_runs() -> None:
    for instance in provisioned(LocalCompute()):
        for method, args, kwargs, said in [
            ("list", (None,), {}, "a path must be a string"),
            ("stat", ("a\0b",), {}, "without NUL bytes"),
            ("list", (".",), {"depth": True}, "depth must be a whole number"),
            ("rename", ("a", 3), {}, "a target must be a string"),
            ("mkdir", ("x" * 300,), {}, "too long"),
        ]:
            with pytest.raises(ValueError, match=said) as info:
                call(instance, method, *args, **kwargs)
            assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match="not an instance id"):
        _portal.call(LocalCompute().files.stat, "../etc", "x")
