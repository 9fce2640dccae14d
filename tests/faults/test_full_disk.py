"""A full disk under PRAISONAI_HOME or under a local workspace is said as such (issue 42, item 4):
one sentence naming the path and what to do, never sqlite's "disk I/O error" or a traceback.

The disk is a real one: a 1 MiB tmpfs mounted (as root) where the home lives, filled with a file
until the kernel says ENOSPC, unmounted afterwards even when a test fails. Where mounting is not
permitted the tests skip and say so.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kit import home_reaper_pid

import praisonai
from praisonai import Sandbox, _portal
from praisonai._errors import DiskFullError, HomeUnusableError
from praisonai._ledger import Ledger
from praisonai.compute.providers.local import LocalCompute

_REPO = Path(praisonai.__file__).parents[1]


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB file system of its own, mounted at a fresh directory."""
    mount = tmp_path / "disk"
    mount.mkdir()
    argv = ["mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs", str(mount)]
    made = subprocess.run(argv, capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({made.stderr.strip()}): needs root")
    try:
        yield mount
    finally:
        reaper = home_reaper_pid(mount / "home")  # the home's reaper process keeps files open in it
        if reaper is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(reaper, signal.SIGKILL)
        if subprocess.run(["umount", str(mount)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(mount)], check=True)  # detached now, gone when let go


def fill(disk: Path) -> None:
    """Write a file until the disk has no block left."""
    with open(disk / "filler", "ab", buffering=0) as f, contextlib.suppress(OSError):
        while True:
            f.write(b"\0" * 4096)
    assert os.statvfs(disk).f_bavail == 0


@pytest.fixture
def full_home(small_disk: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = small_disk / "home"
    monkeypatch.setenv("PRAISONAI_HOME", str(home))
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")  # ps lists this home only
    return home


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "praisonai", *args], capture_output=True, text=True, timeout=120, cwd=_REPO
    )


def said_full(text: str, where: Path) -> bool:
    return f"{where}" in text and "is full" in text and "free some space" in text


@pytest.mark.parametrize("made_before", [False, True], ids=["new-home", "home-with-a-ledger"])
@pytest.mark.parametrize(
    "command",
    [
        ["compute", "ps"],
        ["sandbox", "run", "--compute", "local", "--", "true"],
        ["managed", "sessions", "list"],
    ],
    ids=["ps", "sandbox-run", "sessions"],
)
def test_the_cli_says_a_full_home_in_one_sentence(
    full_home: Path, command: list[str], made_before: bool
) -> None:
    if made_before:  # the ledger and the store exist, with room to spare, before the disk fills
        assert cli("compute", "ps").returncode == 0
        assert cli("managed", "sessions", "list").returncode == 0
    fill(full_home.parent)
    r = cli(*command)
    if command == ["compute", "ps"] and made_before:
        assert r.returncode == 0, r.stderr  # reading a ledger needs no space
        return
    assert r.returncode != 0
    assert said_full(r.stderr, full_home), r.stderr
    assert "Traceback" not in r.stderr and "disk I/O error" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_creating_an_instance_or_writing_a_ledger_row_on_a_full_home_is_said(full_home: Path) -> None:
    ledger = Ledger.default()
    assert ledger.entries() == []  # the ledger exists before the disk fills
    fill(full_home.parent)
    with pytest.raises(HomeUnusableError) as raised:
        Sandbox.create("local")
    assert said_full(str(raised.value), full_home), raised.value
    with pytest.raises(HomeUnusableError) as raised:  # a row larger than any free page
        ledger.record("local_0123456789ab", "local", {"pad": "x" * 20000}, "me", time.time())
    assert said_full(str(raised.value), full_home), raised.value


def test_a_write_file_that_fills_a_local_workspace_says_no_space(full_home: Path) -> None:
    provider = LocalCompute()
    instance_id = _portal.call(provider.provision, {}).instance_id
    workspace = full_home / "local" / instance_id / "workspace"
    try:
        _portal.call(provider.write_file, instance_id, "keep.txt", b"old")
        with pytest.raises(DiskFullError) as raised:
            _portal.call(provider.write_file, instance_id, "keep.txt", b"x" * (2 << 20))
        message = str(raised.value)
        assert "no space left" in message and str(workspace) in message and "keep.txt" in message
        assert isinstance(raised.value, OSError) and "\n" not in message
        assert (workspace / "keep.txt").read_bytes() == b"old"  # the target is as it was
        assert sorted(p.name for p in workspace.iterdir()) == ["keep.txt"]  # no partial file left
    finally:
        _portal.call(provider.shutdown, instance_id)


def test_sqlites_bare_io_error_on_a_full_disk_counts_as_full(small_disk: Path) -> None:
    """What sqlite says when its WAL or shared-memory file cannot grow names no cause."""
    import sqlite3

    from praisonai._home import disk_full

    io_error = sqlite3.OperationalError("disk I/O error")
    assert not disk_full(io_error, small_disk)
    fill(small_disk)
    assert disk_full(io_error, small_disk)
    assert disk_full(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)), small_disk)
