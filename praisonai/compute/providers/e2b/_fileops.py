"""The file API on E2B through envd's own filesystem calls where they keep our contract
(``praisonai.compute.files``: entries as ``lstat`` sees them, links never followed), and the
generic in-sandbox script where they do not. What envd does (its Go, e2b-dev/infra
``packages/envd/internal/services/filesystem``) decides which:

- ``exists``, ``remove``, ``rename`` and ``mkdir`` (with parents) are native: envd's Stat is an
  ``lstat`` (a dangling link exists), Remove is Go's ``os.RemoveAll`` (a link is removed, never
  followed), Move is ``rename(2)`` (a link at the target is replaced, never entered), MakeDir
  makes missing parents. Each error is the one the generic path raises.
- ``stat`` is native except for a link: envd reports a link with the type and permission bits of
  what it points at and the fully resolved path instead of the link's text, so a link is
  stat-ed again by the script (``find -P``), which reports it as a link.
- ``list`` is always the script: envd's ListDir resolves links in the requested path (a link to
  a directory is entered, where our contract refuses it) and reports links inside as above
  (the SDK even drops a dangling one, whose type is unknown).
- ``mkdir`` without parents is the script: envd's MakeDir always makes them.

Differences kept, both only where the generic path fails: envd's Move makes the target's missing
parent directories, and cannot move across filesystems (``mv`` would copy).
"""

from __future__ import annotations

import contextlib
import posixpath
import stat
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from praisonai._errors import ExecError, PathNotFoundError
from praisonai._types import ExecResult, FileEntry
from praisonai.compute.files import PathMapper, ShellFiles
from praisonai.compute.providers.e2b._errors import translated

# Go's FileMode.String() letters for the bits ``EntryInfo.mode`` (Go's ``Perm()``) leaves out.
_SPECIAL = {"u": stat.S_ISUID, "g": stat.S_ISGID, "t": stat.S_ISVTX}


class E2BFiles(ShellFiles):
    """The files part through ``sandbox.files`` where envd keeps the contract, the generic script
    where it does not (see the module docstring). ``sandbox`` gives an instance's SDK sandbox
    (connected and renewed), ``path`` an instance path as the sandbox's absolute one."""

    def __init__(
        self,
        execute: Callable[..., Awaitable[ExecResult]],
        *,
        target: PathMapper,
        sandbox: Callable[[str], Awaitable[Any]],
        path: Callable[[str, str], str],
    ) -> None:
        super().__init__(execute, target=target)
        self._sandbox, self._path = sandbox, path

    async def exists(self, instance_id: str, path: str) -> bool:
        return await self._lstat(instance_id, path, "exists") is not None

    async def stat(self, instance_id: str, path: str) -> FileEntry:
        info = await self._lstat(instance_id, path, "stat")
        if info is None:
            raise _missing(path, "stat")
        if _is_link(info):  # envd follows it for type and mode: the script reports the link
            return await super().stat(instance_id, path)
        return _entry(info, path)

    async def remove(self, instance_id: str, path: str) -> None:
        # envd's RemoveAll succeeds on a missing path, where ours raises: an lstat first (a path
        # removed in between is gone either way).
        if await self._lstat(instance_id, path, "remove") is None:
            raise _missing(path, "remove")
        sandbox = await self._sandbox(instance_id)
        with translated("remove", instance_id, path):
            await sandbox.files.remove(self._path(instance_id, path))

    async def rename(self, instance_id: str, source: str, target: str) -> None:
        sandbox = await self._sandbox(instance_id)
        try:
            with translated("rename", instance_id, source):
                await sandbox.files.rename(self._path(instance_id, source), self._path(instance_id, target))
        except PathNotFoundError as exc:  # NOT_FOUND: the source is missing
            raise _missing(source, "rename") from exc.__cause__

    async def make_dir(self, instance_id: str, path: str, parents: bool, exist_ok: bool) -> None:
        if not parents:  # envd's MakeDir always makes the parents
            await super().make_dir(instance_id, path, parents, exist_ok)
            return
        sandbox = await self._sandbox(instance_id)
        try:
            with translated("mkdir", instance_id, path), _refused(path):
                if await sandbox.files.make_dir(self._path(instance_id, path)):
                    return
        except ExecError:
            # INTERNAL: a file or dangling link on the way (the generic path fails so too), or
            # a dangling link at the path, as envd's chown follows it (FileExistsError there).
            if await self._lstat(instance_id, path, "mkdir") is not None:
                raise _exists(path) from None
            raise
        # ALREADY_EXISTS: envd's check follows links, so a link to a directory counts; ours not.
        info = await self._lstat(instance_id, path, "mkdir")
        if not exist_ok or info is None or _is_link(info):
            raise _exists(path)

    async def _lstat(self, instance_id: str, path: str, op: str) -> Any:
        """envd's Stat of ``path`` (an ``lstat``), or ``None`` where nothing is there."""
        import e2b

        sandbox = await self._sandbox(instance_id)
        try:
            with translated(op, instance_id, path):
                try:
                    return await sandbox.files.get_info(self._path(instance_id, path))
                except e2b.SandboxException as exc:
                    # envd answers ENOTDIR (a file where a directory is named) as INTERNAL with
                    # Go's error text; the generic path, like lstat, finds nothing there.
                    if _not_dir(exc):
                        raise PathNotFoundError(str(exc), op=op) from exc
                    raise
        except PathNotFoundError:
            return None


@contextlib.contextmanager
def _refused(path: str) -> Iterator[None]:
    """envd's INVALID_ARGUMENT from MakeDir (a non-directory at the path) as ``FileExistsError``."""
    import e2b

    try:
        yield
    except e2b.InvalidArgumentException as exc:
        raise _exists(path) from exc


def _not_dir(exc: Exception) -> bool:
    return "not a directory" in str(exc)


def _is_link(info: Any) -> bool:
    # Older envd sets only symlink_target (type is the target's); newer sets is_symlink too,
    # which the SDK maps to type SYMLINK.
    return info.symlink_target is not None or str(getattr(info.type, "value", "")) == "symlink"


def _entry(info: Any, path: str) -> FileEntry:
    """envd's EntryInfo of something other than a link, as the generic path fills it."""
    kind = str(getattr(info.type, "value", "")) or "other"
    letters = info.permissions[:-9] if len(info.permissions) >= 9 else ""
    mode = info.mode | sum(bit for letter, bit in _SPECIAL.items() if letter in letters)
    shown = posixpath.normpath(path or ".")
    return FileEntry(
        name=posixpath.basename(shown) or shown,
        path=shown,
        type=kind if kind in ("file", "dir") else "other",
        size=int(info.size),
        mode=mode,
        mtime=info.modified_time.timestamp(),
        symlink_target=None,
    )


def _missing(path: str, op: str) -> PathNotFoundError:
    return PathNotFoundError(f"no such file or directory in the instance: {path}", op=op)


def _exists(path: str) -> FileExistsError:
    return FileExistsError(f"{path} already exists and is not a directory")
