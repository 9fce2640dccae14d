"""A streamed tar of the selected entries of a local tree, written to a file: one entry at a
time, each file copied in blocks, so memory stays small whatever the tree's size."""

from __future__ import annotations

import os
import stat
import tarfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


@dataclass(frozen=True)
class Packed:
    """What went into the archive."""

    files: int
    links: int
    bytes: int


def pack(root: Path, names: Iterable[str], into: BinaryIO, owner: tuple[int, int]) -> Packed:
    """Write a tar of ``names`` (relative to ``root``) to ``into``, owned by ``owner`` (the
    instance user's uid and gid). Every name is opened beneath ``root`` one component at a time,
    never following a link: a link is archived as a link, a name through a link is skipped, and
    so is anything that is neither a regular file, a directory nor a link, or vanished since it
    was listed."""
    files = links = size = 0
    with (
        tarfile.open(fileobj=into, mode="w|", format=tarfile.PAX_FORMAT) as tar,
        _Opened(os.open(root, _DIR)) as top,
    ):
        for name in names:
            parts = name.split("/")
            if name.startswith("/") or any(p in ("", ".", "..") for p in parts):
                continue  # a name git or the walk would never give: skipped, never resolved
            info = _add(tar, top.fd, parts, name, owner)
            if info is not None:
                files, links, size = files + info.isreg(), links + info.issym(), size + info.size
    return Packed(files, links, size)


def _add(
    tar: tarfile.TarFile, top: int, parts: list[str], name: str, owner: tuple[int, int]
) -> tarfile.TarInfo | None:
    """Archive one entry; ``None`` when it is skipped. A failure while a file's bytes are
    copied is raised (the archive would be broken), one before is a skip (the entry vanished
    or passes through a link)."""
    try:
        parent = _parent(top, parts)
    except OSError:
        return None
    with _Opened(parent):
        info = tarfile.TarInfo(name)
        info.uid, info.gid, info.uname, info.gname = owner[0], owner[1], "", ""
        try:
            mode = os.stat(parts[-1], dir_fd=parent, follow_symlinks=False).st_mode
            if stat.S_ISLNK(mode):
                info.type, info.linkname = tarfile.SYMTYPE, os.readlink(parts[-1], dir_fd=parent)
            opened = os.open(parts[-1], _FILE, dir_fd=parent) if stat.S_ISREG(mode) else -1
        except OSError:
            return None
        if stat.S_ISLNK(mode) or stat.S_ISDIR(mode):
            info.type, info.mode = (
                (tarfile.SYMTYPE, 0o777) if stat.S_ISLNK(mode) else (tarfile.DIRTYPE, 0o755)
            )
            tar.addfile(info)
            return info
        if opened < 0:
            return None  # a FIFO, socket or device: never sent
        with _Opened(opened), open(opened, "rb", closefd=False) as source:
            facts = os.fstat(opened)
            if not stat.S_ISREG(facts.st_mode):  # swapped since the stat: skipped
                return None
            info.size, info.mode, info.mtime = facts.st_size, stat.S_IMODE(facts.st_mode), int(facts.st_mtime)
            tar.addfile(info, source)
        return info


def _parent(top: int, parts: list[str]) -> int:
    """The directory holding ``parts[-1]``, opened component by component, refusing links
    (``OSError``: the name passes through a link, or vanished)."""
    fd = os.dup(top)
    for part in parts[:-1]:
        try:
            sub = os.open(part, _DIR, dir_fd=fd)
        finally:
            os.close(fd)
        fd = sub
    return fd


class _Opened:
    """An fd closed on exit."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def __enter__(self) -> _Opened:
        return self

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)
