"""``sb.files``: the E2B-shaped file API of a sandbox, sync and async, on local, docker and ssh."""

from __future__ import annotations

import inspect
from typing import Any

import anyio
import pytest

from praisonai import AsyncSandbox, FileEntry, Sandbox, SandboxClosedError
from praisonai.sandbox import AsyncFiles, Files


def test_sync_files_mirror_every_async_method() -> None:
    names = {n for n, f in vars(AsyncFiles).items() if inspect.iscoroutinefunction(f)}
    assert names == {"list", "exists", "stat", "remove", "rename", "mkdir", "read", "write"}
    assert not {n for n in names if not callable(getattr(Files, n, None))}


def exercise(sb: Sandbox) -> None:
    files = sb.files
    files.mkdir("w/a/b")
    files.write("w/a/b/f.txt", "hello")
    files.write("w/top", b"\x00")
    listed = files.list("w")
    assert [(e.path, e.type) for e in listed] == [("w/a", "dir"), ("w/top", "file")] and listed[1].size == 1
    deep = files.list("w", depth=3)
    assert [e.name for e in deep] == ["a", "b", "f.txt", "top"]
    info = files.stat("w/a/b/f.txt")
    assert isinstance(info, FileEntry) and (info.type, info.size, info.mode & 0o400) == ("file", 5, 0o400)
    files.rename("w/a", "w/moved")
    assert files.read("w/moved/b/f.txt") == b"hello" and not files.exists("w/a")
    with pytest.raises(FileExistsError):
        files.mkdir("w/top")
    with pytest.raises(FileNotFoundError):
        files.stat("w/a")
    files.remove("w")
    assert not files.exists("w")


def test_sync_files_on_local() -> None:
    with Sandbox.create("local") as sb:
        exercise(sb)
    with pytest.raises(SandboxClosedError):
        sb.files.list(".")


@pytest.mark.usefixtures("docker_ok")
def test_sync_files_on_docker() -> None:
    with Sandbox.create("docker") as sb:
        exercise(sb)


def test_sync_files_on_ssh(sshd: Any) -> None:
    from praisonai.compute.providers.ssh import SSHCompute

    with Sandbox.create(SSHCompute(**sshd.connect_kwargs())) as sb:
        exercise(sb)


def test_async_files() -> None:
    async def main() -> None:
        async with await AsyncSandbox.create("local") as sb:
            await sb.files.write("n\nl", "x")  # a name with a newline is one entry
            assert [e.name for e in await sb.files.list()] == ["n\nl"]
            assert (await sb.files.stat("n\nl")).size == 1
            await sb.files.remove("n\nl")
            assert await sb.files.list() == []

    anyio.run(main)
