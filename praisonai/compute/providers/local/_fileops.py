"""The ``local`` provider's file API (list, stat, remove, rename, mkdir) on the host side of a
workspace, natively: every path is reached through directory fds opened beneath the workspace
without following a link (``_beneath``), and the last component is acted on with the ``*at``
calls that never follow one (``lstat``, ``unlinkat``, ``renameat``, an fd-based tree removal). The
instance's commands control the tree and may swap a directory for a link at any moment: nothing
is checked and then opened again by name. Blocking: the provider calls these in worker threads.
"""

from __future__ import annotations

import os
import posixpath
import stat
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from praisonai._errors import ConfigError, PathNotFoundError
from praisonai._types import FileEntry
from praisonai.compute.providers.local._beneath import open_dir, opened

if TYPE_CHECKING:
    from praisonai.compute.providers.local._record import Instance

_T = TypeVar("_T")
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def stat_entry(workspace: Path, parts: list[str], shown: str) -> FileEntry:
    """What is at ``parts``, as ``lstat`` sees it."""
    if not parts:
        with opened(os.open(workspace, _DIR)) as root:
            return _entry(os.fstat(root), shown, None)
    with _parent(workspace, parts, shown) as parent:
        return _lstat(parent, parts[-1], shown)


def list_entries(workspace: Path, parts: list[str], shown: str, depth: int) -> list[FileEntry]:
    """The entries ``depth`` levels below the directory ``parts`` (a link to one is refused)."""
    with opened(os.open(workspace, _DIR)) as root:
        top = _missing(lambda: open_dir(root, parts, shown), shown)
    with opened(top):
        found: list[FileEntry] = []
        _scan(top, posixpath.normpath(shown), depth, found)
        return found


async def exists(pending: Awaitable[FileEntry]) -> bool:
    """Whether the stat ``pending`` finds something (a link on the way is still refused)."""
    try:
        await pending
    except PathNotFoundError:
        return False
    return True


def remove(workspace: Path, parts: list[str], shown: str) -> None:
    """Remove the file or link (not its target) or the whole tree at ``parts``."""
    with _parent(workspace, parts, shown) as parent:
        info = _missing(lambda: os.stat(parts[-1], dir_fd=parent, follow_symlinks=False), shown)
        if stat.S_ISDIR(info.st_mode):
            _remove_tree(parent, parts[-1])
        else:
            os.unlink(parts[-1], dir_fd=parent)


def rename(workspace: Path, source: list[str], target: list[str], shown: str, shown_target: str) -> None:
    """``renameat`` of ``source`` to ``target``: a link at either end is moved or replaced, never
    followed."""
    with _parent(workspace, source, shown) as old, _parent(workspace, target, shown_target) as new:
        _missing(lambda: os.rename(source[-1], target[-1], src_dir_fd=old, dst_dir_fd=new), shown)


def make_dir(workspace: Path, parts: list[str], shown: str, parents: bool, exist_ok: bool) -> None:
    """Make the directory ``parts`` (its missing parents too with ``parents``)."""
    with opened(os.open(workspace, _DIR)) as root:
        parent = open_dir(root, parts[:-1], shown, create=True) if parents else None
        if parent is None:
            parent = _missing(lambda: open_dir(root, parts[:-1], shown), shown)
        with opened(parent):
            try:
                os.mkdir(parts[-1], 0o777, dir_fd=parent)
            except FileExistsError:
                info = os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
                if not (exist_ok and stat.S_ISDIR(info.st_mode)):
                    raise FileExistsError(f"{shown} already exists") from None


# ---- the pieces ----------------------------------------------------------------------------


class _parent:
    """The directory fd holding ``parts[-1]``, reached without a link (a context manager)."""

    def __init__(self, workspace: Path, parts: list[str], shown: str) -> None:
        self.args = workspace, parts, shown

    def __enter__(self) -> int:
        workspace, parts, shown = self.args
        if not parts:
            raise ConfigError(
                f"{shown} is the instance's working dir itself; name a path inside it", op="files"
            )
        with opened(os.open(workspace, _DIR)) as root:
            self.fd: int = _missing(lambda: open_dir(root, parts[:-1], shown), shown)
        return self.fd

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)


def _missing(call: Callable[[], _T], shown: str) -> _T:
    try:
        return call()
    except (FileNotFoundError, PathNotFoundError):
        raise PathNotFoundError(f"no such file or directory in the instance: {shown}", op="files") from None


def _lstat(parent: int, name: str, shown: str) -> FileEntry:
    info = _missing(lambda: os.stat(name, dir_fd=parent, follow_symlinks=False), shown)
    target = os.readlink(name, dir_fd=parent) if stat.S_ISLNK(info.st_mode) else None
    return _entry(info, shown, target)


def _remove_tree(parent: int, name: str) -> None:
    """Remove the directory ``name`` and everything in it, each level opened by fd without
    following a link (shutil.rmtree takes no ``dir_fd`` before Python 3.11): a directory swapped
    for a link meanwhile is unlinked as a link, never entered."""
    try:
        fd = os.open(name, _DIR, dir_fd=parent)
    except OSError:  # a link (ELOOP/ENOTDIR) or a file now: removed as what it is
        os.unlink(name, dir_fd=parent)
        return
    with opened(fd):
        for child in os.listdir(fd):
            if stat.S_ISDIR(os.stat(child, dir_fd=fd, follow_symlinks=False).st_mode):
                _remove_tree(fd, child)
            else:
                os.unlink(child, dir_fd=fd)
    os.rmdir(name, dir_fd=parent)


def _scan(fd: int, below: str, depth: int, found: list[FileEntry]) -> None:
    for name in sorted(os.listdir(fd)):
        path = posixpath.join(below, name) if below != "." else name
        try:
            entry = _lstat(fd, name, path)
        except PathNotFoundError:  # removed since the listing
            continue
        found.append(entry)
        if depth > 1 and entry.type == "dir":
            try:
                sub = os.open(name, _DIR, dir_fd=fd)  # O_NOFOLLOW: a dir swapped for a link is skipped
            except OSError:
                continue
            with opened(sub):
                _scan(sub, path, depth - 1, found)


def _entry(info: os.stat_result, shown: str, target: str | None) -> FileEntry:
    mode = info.st_mode
    kind = (
        "dir"
        if stat.S_ISDIR(mode)
        else "file"
        if stat.S_ISREG(mode)
        else "symlink"
        if target is not None
        else "other"
    )
    path = posixpath.normpath(shown or ".")
    return FileEntry(
        name=posixpath.basename(path) or path,
        path=path,
        type=kind,
        size=info.st_size,
        mode=stat.S_IMODE(mode),
        mtime=info.st_mtime,
        symlink_target=target,
    )


class NativeFiles:
    """The provider's files part, done by the functions above in worker threads: ``load`` gives
    an instance's record, ``parts`` a checked path's components beneath its workspace."""

    def __init__(self, load: Callable[[str], Instance], parts: Callable[[Instance, str], list[str]]) -> None:
        self._load, self._parts = load, parts

    async def _on_path(self, instance_id: str, fn: Any, path: str, *args: Any) -> Any:
        inst = self._load(instance_id)
        return await anyio.to_thread.run_sync(fn, inst.workspace, self._parts(inst, path), path, *args)

    async def entries(self, instance_id: str, path: str, depth: int) -> list[FileEntry]:
        return await self._on_path(instance_id, list_entries, path, depth)  # type: ignore[no-any-return]

    async def stat(self, instance_id: str, path: str) -> FileEntry:
        return await self._on_path(instance_id, stat_entry, path)  # type: ignore[no-any-return]

    async def exists(self, instance_id: str, path: str) -> bool:
        return await exists(self.stat(instance_id, path))

    async def remove(self, instance_id: str, path: str) -> None:
        await self._on_path(instance_id, remove, path)

    async def make_dir(self, instance_id: str, path: str, parents: bool, exist_ok: bool) -> None:
        await self._on_path(instance_id, make_dir, path, parents, exist_ok)

    async def rename(self, instance_id: str, source: str, target: str) -> None:
        inst = self._load(instance_id)
        parts = self._parts(inst, source), self._parts(inst, target)
        await anyio.to_thread.run_sync(rename, inst.workspace, *parts, source, target)
