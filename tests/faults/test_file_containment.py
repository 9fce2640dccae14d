"""File operations against an instance that fights back: links swapped in while we open, links
planted for uploads and downloads, two writers on one file. Against the real providers (local,
local under bubblewrap, docker)."""

from __future__ import annotations

import io
import os
import re
import tarfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest
from kit import Instance, provisioned, race_writers
from kit import run_ok as run

from praisonai import _portal
from praisonai._errors import PathNotFoundError, PathOutsideWorkspaceError
from praisonai.compute import _tar
from praisonai.compute.base import ComputeProvider
from praisonai.compute.providers.local import LocalCompute, _beneath
from praisonai.runtime import partial

RACE_SECONDS = 4.0  # the old check-then-open lost a few hundred times in this long

#: A write's temporary file beside its target (``praisonai.runtime.partial``, every provider).
TEMPORARY = re.compile(rf"^{re.escape(partial.PREFIX)}[0-9a-f]+$", re.MULTILINE)


@pytest.fixture(params=["plain", pytest.param("bwrap", marks=pytest.mark.bwrap)])
def local(request: pytest.FixtureRequest) -> Iterator[Instance]:
    if request.param == "bwrap":
        request.getfixturevalue("bwrap_ok")
    yield from provisioned(LocalCompute(isolate=request.param == "bwrap"))


@pytest.fixture
def swapping(local: Instance, host_dir: Path) -> Iterator[Instance]:
    """The instance runs a loop that swaps its directory ``real`` for a link to ``host_dir``."""
    provider, instance_id = local
    run(local, "mkdir real && printf inside > real/marker")
    loop = f"while [ ! -e stop ]; do mv real aside; ln -s {host_dir} real; rm real; mv aside real; done"
    process = _portal.call(provider.processes.start, instance_id, loop)
    try:
        yield local
    finally:
        run(local, "touch stop")
        _portal.call(provider.processes.kill, instance_id, process.process_id)


@pytest.mark.parametrize("resolver", ["openat2", "walk"])
def test_a_racing_link_swap_never_reaches_the_host(
    swapping: Instance, host_dir: Path, resolver: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both ways of opening beneath the workspace: openat2, and the O_NOFOLLOW walk of kernels
    without it (forced here: this process's file API calls run in its own threads)."""
    if resolver == "walk":
        monkeypatch.setattr(_beneath, "_have_openat2", False)
    provider, instance_id = swapping
    refused = answered = 0
    deadline = time.monotonic() + RACE_SECONDS
    i = 0
    while time.monotonic() < deadline:
        i += 1
        try:
            data = _portal.call(provider.read_file, instance_id, "real/marker")
            assert data == b"inside", "read_file returned a host file through a swapped link"
            answered += 1
            _portal.call(provider.write_file, instance_id, f"real/new-{i}", b"x")
        except (PathOutsideWorkspaceError, PathNotFoundError, NotADirectoryError):
            refused += 1
    assert sorted(p.name for p in host_dir.iterdir()) == ["marker"], "write_file created a file on the host"
    assert answered and refused, "the race did not run both ways"  # the loop really swapped
    if resolver == "openat2" and not _beneath._have_openat2:
        pytest.skip("this kernel has no openat2: only the walk protects it (tested above)")


def test_upload_never_follows_a_planted_link(local: Instance, host_dir: Path, tmp_path: Path) -> None:
    provider, instance_id = local
    run(local, f"mkdir dst && ln -s {host_dir} dst/sub")
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "sub" / "planted").write_text("x")
    single = tmp_path / "single"
    single.write_text("x")
    with pytest.raises(PathOutsideWorkspaceError, match="symbolic link"):
        _portal.call(provider.upload_file, instance_id, tree, "dst")
    with pytest.raises(PathOutsideWorkspaceError, match="symbolic link"):
        _portal.call(provider.upload_file, instance_id, single, "dst/sub/planted")
    assert sorted(p.name for p in host_dir.iterdir()) == ["marker"]


def test_download_copies_inner_links_as_links_and_refuses_the_rest(
    local: Instance, host_dir: Path, tmp_path: Path
) -> None:
    provider, instance_id = local
    run(local, f"mkdir -p t/d && printf in > t/d/f && ln -s d/f t/near && ln -s {host_dir} top")
    out = tmp_path / "out"
    _portal.call(provider.download_file, instance_id, "t", out)
    assert os.readlink(out / "near") == "d/f" and (out / "near").read_bytes() == b"in"
    with pytest.raises(PathOutsideWorkspaceError, match="symbolic link"):
        _portal.call(provider.download_file, instance_id, "top", tmp_path / "top")
    assert not (tmp_path / "top").exists()
    for name, target in (("far", f"{host_dir}/marker"), ("chain", "a/..")):  # t/d/a -> . makes a/.. leave d
        run(local, f"ln -sfn . t/d/a && ln -s {target} t/d/{name}")
        again = tmp_path / f"again-{name}"
        with pytest.raises(PathOutsideWorkspaceError, match="out of the downloaded tree"):
            _portal.call(provider.download_file, instance_id, "t/d", again)
        assert not os.path.lexists(again / name), "a link out of the tree was left on the host"
        run(local, f"rm t/d/{name}")


@pytest.mark.parametrize("target", ["/etc/passwd", "../../..", "a/.."])
def test_ssh_download_refuses_links_out_of_the_tree(
    ssh_instance: Instance, tmp_path: Path, target: str
) -> None:
    run(ssh_instance, f"rm -rf t && mkdir t && printf in > t/f && ln -s . t/a && ln -s {target} t/l")
    provider, instance_id = ssh_instance
    with pytest.raises(PathOutsideWorkspaceError, match="out of the downloaded tree"):
        _portal.call(provider.download_file, instance_id, "t", tmp_path / "out")
    assert not os.path.lexists(tmp_path / "out")  # refused whole: nothing partial is left behind


# ---- a tar made by the instance, extracted on the host -------------------------------------


@pytest.mark.docker
@pytest.mark.parametrize("target", ["/etc/passwd", "../../../../x"])
def test_docker_download_refuses_links_out_of_the_tree(
    docker_instance: Instance, tmp_path: Path, target: str
) -> None:
    run(
        docker_instance,
        f"rm -rf /tmp/t && mkdir -p /tmp/t && printf in > /tmp/t/f && ln -s {target} /tmp/t/l",
    )
    provider, instance_id = docker_instance
    out = tmp_path / "deep" / "out"
    with pytest.raises(PathOutsideWorkspaceError, match="symbolic link") as caught:
        _portal.call(provider.download_file, instance_id, "/tmp/t", out)
    assert "tarfile" not in str(caught.value) and "\n" not in str(caught.value)
    assert not out.exists(), "a refused download left a partial tree"
    assert list(tmp_path.iterdir()) == [], "a refused download wrote something"


def member(
    name: str, kind: bytes = tarfile.REGTYPE, link: str = "", data: bytes = b"x"
) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.size = kind, link, len(data) if kind == tarfile.REGTYPE else 0
    return info, data


#: archives an instance could hand us (a provider that runs `tar` inside it trusts that `tar`)
HOSTILE_TARS = {
    "a member climbing out": [member("t", tarfile.DIRTYPE), member("t/../../escaped")],
    "an absolute member": [member("t", tarfile.DIRTYPE), member("/tmp/escaped")],
    "a write through a link": [
        member("t", tarfile.DIRTYPE),
        member("t/l", tarfile.SYMTYPE, "."),
        member("t/l/escaped"),
    ],
    "a link chain out": [
        member("t", tarfile.DIRTYPE),
        member("t/a", tarfile.SYMTYPE, "."),
        member("t/b", tarfile.SYMTYPE, "a/.."),
    ],
    "a hard link to a host file": [
        member("t", tarfile.DIRTYPE),
        member("t/h", tarfile.LNKTYPE, "/etc/passwd"),
    ],
}


@pytest.mark.parametrize("case", HOSTILE_TARS)
def test_a_hostile_archive_is_refused_before_anything_is_written(tmp_path: Path, case: str) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for info, data in HOSTILE_TARS[case]:
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    out = tmp_path / "a" / "out"
    with pytest.raises(PathOutsideWorkspaceError, match="refused") as caught:
        _tar.unpack_to([buffer.getvalue()], out, "/workspace/t")
    assert "\n" not in str(caught.value)
    assert list(tmp_path.iterdir()) == [], f"{case}: something was written"


# ---- two writers and a reader ------------------------------------------------------------------


def test_local_concurrent_writes_never_mix(local: Instance) -> None:
    provider, instance_id = local
    seen = race_writers([provider] * 3, instance_id, "shared.bin")
    assert seen <= {"payload 0", "payload 1"}, f"a reader saw a mix: {seen}"


def test_local_write_keeps_the_mode_of_the_file_it_replaces(local: Instance) -> None:
    provider, instance_id = local
    run(local, "printf old > tool.sh && chmod 750 tool.sh")
    _portal.call(provider.write_file, instance_id, "tool.sh", b"new")
    result = _portal.call(provider.execute, instance_id, "stat -c %a tool.sh; ls -a")
    assert result.stdout.split()[0] == "750"
    assert not TEMPORARY.findall(result.stdout), "a temporary file was left behind"


@pytest.mark.docker
def test_docker_concurrent_writes_never_mix(docker_instance: Instance) -> None:
    from praisonai.compute.providers.docker import DockerCompute

    _, instance_id = docker_instance
    # one provider per party: each has its own channel, so its own helper in the container
    providers: list[ComputeProvider] = [DockerCompute() for _ in range(3)]
    seen = race_writers(providers, instance_id, "/tmp/shared.bin")
    assert seen <= {"payload 0", "payload 1"}, f"a reader saw a mix: {seen}"
    run(docker_instance, "printf old > /tmp/tool.sh && chmod 750 /tmp/tool.sh")
    _portal.call(providers[0].write_file, instance_id, "/tmp/tool.sh", b"new")
    result = _portal.call(providers[0].execute, instance_id, "stat -c %a /tmp/tool.sh; ls -a /tmp")
    assert result.stdout.split()[0] == "750"
    assert not TEMPORARY.findall(result.stdout), "a temporary file was left behind"


@pytest.mark.docker
def test_docker_fifos_planted_where_the_next_writes_go_cannot_stall_the_helper(
    docker_ok: None, make: Callable[..., Instance]
) -> None:
    """A command plants FIFOs at every name the helper's next writes would take. That name was
    the target's, the helper's pid and a counter, and the helper's exclusive create opens what is
    not a regular file (sh's noclobber), so it blocked on the FIFO and every later call through
    it hung. The name is random now: the write goes through."""
    from praisonai.compute.providers.docker import DockerCompute

    provider, instance_id = make(DockerCompute())
    run(
        (provider, instance_id),
        "mkdir /tmp/trap && for d in /proc/[0-9]*; do "
        'grep -qF praisonai-helper "$d/cmdline" 2>/dev/null || continue; n=0; '
        'while [ $n -lt 50 ]; do n=$((n + 1)); mkfifo "/tmp/trap/.f.praisonai-${d#/proc/}-$n"; done; done; '
        "ls -A /tmp/trap | grep -q praisonai",
    )

    async def write_in_time() -> bytes:
        with anyio.fail_after(10):
            await provider.write_file(instance_id, "/tmp/trap/f", b"through")
            return await provider.read_file(instance_id, "/tmp/trap/f")

    assert _portal.call(write_in_time) == b"through"


def test_ssh_concurrent_writes_never_mix(ssh_instance: Instance) -> None:
    provider, instance_id = ssh_instance
    seen = race_writers([provider] * 3, instance_id, "shared.bin")
    assert seen <= {"payload 0", "payload 1"}, f"a reader saw a mix: {seen}"
    run(ssh_instance, "printf old > tool.sh && chmod 750 tool.sh")
    _portal.call(provider.write_file, instance_id, "tool.sh", b"new")
    result = _portal.call(provider.execute, instance_id, "stat -c %a tool.sh; ls -a")
    assert result.stdout.split()[0] == "750"
    assert not TEMPORARY.findall(result.stdout), "a temporary file was left behind"


def test_ssh_upload_of_a_file_replaces_a_planted_link_and_keeps_the_mode(
    ssh_instance: Instance, tmp_path: Path
) -> None:
    """upload_file of one file was SFTP's put straight onto the target: through a link a command
    planted there (into the file it names) and in place (a put cut short left half a file). It is
    now a new file renamed over the target, as write_file is."""
    provider, instance_id = ssh_instance
    run(ssh_instance, "printf mine > victim && ln -sf victim planted && printf old > tool && chmod 750 tool")
    source = tmp_path / "source"
    source.write_bytes(b"uploaded")
    _portal.call(provider.upload_file, instance_id, source, "planted")
    _portal.call(provider.upload_file, instance_id, source, "tool")
    command = "cat victim; echo; test -L planted || echo replaced; stat -c %a tool; cat tool; echo; ls -a"
    result = _portal.call(provider.execute, instance_id, command)
    assert result.stdout.split()[:4] == ["mine", "replaced", "750", "uploaded"], result.stdout
    assert not TEMPORARY.findall(result.stdout), "a temporary file was left behind"
