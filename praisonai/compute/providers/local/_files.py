"""The ``local`` provider's file operations on the host side of a workspace (blocking: the
provider calls them in worker threads).

Every path in the workspace is opened beneath the workspace's directory fd without following a
link (``_beneath``): the instance's commands control that tree and may swap a directory for a
link at any moment. Writes go to a new file in the same directory, renamed over the target, so a
reader sees the old file or the new one, never a mix of two writers. A replaced file keeps its
permission bits; a new one gets 0666 less the umask.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import shutil
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from praisonai import _limits
from praisonai._errors import (
    ConfigError,
    DiskFullError,
    PathNotFoundError,
    PathOutsideWorkspaceError,
    PraisonAIError,
)
from praisonai._home import disk_full
from praisonai.compute._tar import refuse_links_out
from praisonai.compute.providers.local._beneath import open_beneath, open_dir, opened
from praisonai.runtime.partial import partial_name

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_CHUNK = 1024 * 1024


def workspace_fd(workspace: Path) -> int:
    """The workspace directory, opened (our own path: its parents are not the instance's)."""
    return os.open(workspace, _DIR)


def check_dir(workspace: Path, parts: list[str], shown: str) -> None:
    """Raise unless ``parts`` is a directory in the workspace reached without a link."""
    with opened(workspace_fd(workspace)) as root:
        try:
            os.close(open_dir(root, parts, shown))
        except (PathNotFoundError, NotADirectoryError):
            raise PathNotFoundError(f"working directory {shown} does not exist", op="exec") from None


def read_bytes(workspace: Path, parts: list[str], shown: str) -> bytes:
    """The file's bytes. Opened without blocking and checked before reading: a FIFO would block
    forever and a device (``/dev/zero``) never end, so only regular files are read, and at most
    ``MAX_READ_BYTES`` of them (a file growing while it is read is caught by the bounded read)."""
    limit = _limits.MAX_READ_BYTES
    with opened(workspace_fd(workspace)) as root:
        try:
            fd = open_beneath(root, parts, os.O_RDONLY | os.O_NONBLOCK, shown)
        except PathNotFoundError:
            raise PathNotFoundError(f"no such file in the instance: {shown}", op="read_file") from None
    with opened(fd):
        info = os.fstat(fd)
        _check_regular(info.st_mode, shown, "read_file")
        with open(fd, "rb", closefd=False) as f:
            data = b"" if info.st_size > limit else f.read(limit + 1)
    if info.st_size > limit or len(data) > limit:
        raise ValueError(f"{shown} is larger than {limit} bytes; use download")
    return data


@contextlib.contextmanager
def space_said(workspace: Path, shown: str) -> Iterator[None]:
    """A write into the workspace that found its disk full, said in one sentence
    (``DiskFullError``); the target is as it was (the new file is written beside it)."""
    try:
        yield
    except OSError as exc:
        if isinstance(exc, PraisonAIError) or not disk_full(exc, workspace):
            raise
        raise DiskFullError(
            f"no space left on the disk holding the workspace {workspace}, so {shown} was not written; "
            "free some space on it (remove files the instance no longer needs), then write it again"
        ) from exc


def write_bytes(workspace: Path, parts: list[str], data: bytes, shown: str) -> None:
    """Replace the file with ``data`` (missing parent directories are made)."""
    with opened(workspace_fd(workspace)) as root:
        _write_into(root, parts, shown, lambda out: out.write(data))


def upload(local: Path, workspace: Path, parts: list[str], shown: str) -> None:
    """Copy the caller's file or tree ``local`` to ``parts``; links in it are copied as links."""
    with opened(workspace_fd(workspace)) as root:
        if not local.is_dir():
            with local.open("rb") as source:
                _write_into(root, parts, shown, _copier(source))
            return
        with opened(open_dir(root, parts, shown, create=True)) as target:
            _upload_tree(local, target, shown)


def download(workspace: Path, parts: list[str], local: Path, shown: str) -> None:
    """Copy the instance's file or tree ``parts`` to ``local`` (made where missing).

    Nothing is followed: a link on the way to ``parts`` is refused, a link inside the tree is
    copied as a link when it points inside the copied tree, and refused otherwise (an absolute
    link or one that climbs out of the tree), so neither host files are read nor links to them
    planted. On the host side every entry is made beneath ``local``'s fd, never through a link.
    Special files (FIFOs, sockets, devices) inside a tree are skipped.
    """
    with contextlib.suppress(FileNotFoundError):  # the caller's own links on the host are theirs to
        local = Path(os.path.realpath(local, strict=True))  # follow (a loop raises ELOOP: said above us)
    with opened(workspace_fd(workspace)) as root:
        source = open_beneath(root, parts, os.O_RDONLY | os.O_NONBLOCK, shown)
    with opened(source):
        if not stat.S_ISDIR(os.fstat(source).st_mode):
            _check_regular(os.fstat(source).st_mode, shown, "download")
            local.parent.mkdir(parents=True, exist_ok=True)
            with opened(os.open(local.parent, _DIR)) as target:
                _copy_file(source, target, local.name, local.name)
            return
        local.mkdir(parents=True, exist_ok=True)
        links: dict[str, str] = {}
        with opened(os.open(local, _DIR)) as target:
            _download_tree(source, target, "", links)
    refuse_links_out(local, links, shown)


# ---- the pieces ----------------------------------------------------------------------------


def _write_into(root: int, parts: list[str], shown: str, fill: Callable[[BinaryIO], object]) -> None:
    """Make a new file beside ``parts`` (``O_EXCL``), let ``fill`` write it, rename it over."""
    if not parts:
        raise IsADirectoryError(f"{shown} is a directory")
    with opened(open_dir(root, parts[:-1], shown, create=True)) as parent:
        name = parts[-1]
        mode = _replaced_mode(parent, name, shown)
        partial = partial_name()
        fd = os.open(
            partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666, dir_fd=parent
        )
        try:
            with open(fd, "wb", closefd=False) as out:
                fill(out)
            if mode is not None:
                os.fchmod(fd, mode)
            os.close(fd)
            fd = -1
            os.rename(partial, name, src_dir_fd=parent, dst_dir_fd=parent)  # renameat: no link followed
        except BaseException:
            if fd >= 0:
                os.close(fd)
            os.unlink(partial, dir_fd=parent)
            raise


def _replaced_mode(parent: int, name: str, shown: str) -> int | None:
    """The permission bits of the regular file ``name`` replaces (None: no file there yet)."""
    try:
        info = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode):
        raise PathOutsideWorkspaceError(
            f"{shown} is a symbolic link; file operations never follow links in the workspace", op="path"
        )
    _check_regular(info.st_mode, shown, "write_file")
    return stat.S_IMODE(info.st_mode)


def _check_regular(mode: int, shown: str, op: str) -> None:
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(f"{shown} is a directory")
    if not stat.S_ISREG(mode):
        raise ConfigError(
            f"{shown} is not a regular file (a FIFO, device or socket); {op} handles regular files only",
            op=op,
        )


def _upload_tree(local: Path, target: int, shown: str) -> None:
    for entry in sorted(local.iterdir()):
        if entry.is_symlink():
            _replace_link(os.readlink(entry), entry.name, target)
        elif entry.is_dir():
            with opened(open_dir(target, [entry.name], shown, create=True)) as sub:
                _upload_tree(entry, sub, shown)
        else:
            with entry.open("rb") as source:
                _write_into(target, [entry.name], shown, _copier(source))


def _download_tree(source: int, target: int, below: str, links: dict[str, str]) -> None:
    """Copy the directory ``source`` into ``target``; ``below`` is where it is in the copied
    tree. Links are copied as links, and recorded in ``links`` for ``refuse_links_out``."""
    for name in sorted(os.listdir(source)):
        info = os.stat(name, dir_fd=source, follow_symlinks=False)
        where = posixpath.join(below, name)
        if stat.S_ISLNK(info.st_mode):
            links[where] = os.readlink(name, dir_fd=source)
            _replace_link(links[where], name, target)
        elif stat.S_ISDIR(info.st_mode):
            with (
                opened(os.open(name, _DIR, dir_fd=source)) as sub_source,
                opened(open_dir(target, [name], where, create=True)) as sub_target,
            ):
                _download_tree(sub_source, sub_target, where, links)
        elif stat.S_ISREG(info.st_mode):
            flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
            with opened(os.open(name, flags, dir_fd=source)) as fd:
                if stat.S_ISREG(os.fstat(fd).st_mode):  # swapped since the listing: skipped
                    _copy_file(fd, target, name, where)


def _copy_file(source: int, target: int, name: str, shown: str) -> None:
    with open(source, "rb", closefd=False) as reader:
        _write_into(target, [name], shown, _copier(reader))


def _copier(reader: BinaryIO) -> Callable[[BinaryIO], object]:
    """What ``_write_into`` calls to fill the new file from ``reader``."""
    return lambda out: shutil.copyfileobj(reader, out, _CHUNK)


def _replace_link(pointed: str, name: str, target: int) -> None:
    """Make ``name`` a link to ``pointed`` in ``target``, replacing a link or file there."""
    try:
        os.symlink(pointed, name, dir_fd=target)
    except FileExistsError:
        if stat.S_ISDIR(os.stat(name, dir_fd=target, follow_symlinks=False).st_mode):
            raise IsADirectoryError(f"cannot copy the link {name} over a directory") from None
        os.unlink(name, dir_fd=target)
        os.symlink(pointed, name, dir_fd=target)
