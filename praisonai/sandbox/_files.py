"""``sb.files``: the file API of a sandbox, shaped as E2B's (``list``, ``exists``, ``stat``,
``remove``, ``rename``, ``mkdir``, ``read``, ``write``), over the provider's file API
(``provider.files``: ``praisonai.compute.files.Files``), so the same containment rules hold: operations
run inside the instance, links are reported, removed and renamed as links, never followed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from praisonai import _portal
from praisonai._types import FileEntry

if TYPE_CHECKING:
    from praisonai.sandbox._async import AsyncSandbox


class AsyncFiles:
    """The files of one sandbox; paths are instance paths (relative: the working dir)."""

    def __init__(self, sandbox: AsyncSandbox) -> None:
        self._sb = sandbox

    async def list(self, path: str = ".", depth: int = 1) -> list[FileEntry]:
        """The entries ``depth`` levels below the directory ``path`` (1: its children)."""
        self._sb._ensure_open()
        return await self._sb.provider.files.list(self._sb.id, path, depth=depth)

    async def exists(self, path: str) -> bool:
        """Whether anything (a dangling link too) is at ``path``."""
        self._sb._ensure_open()
        return await self._sb.provider.files.exists(self._sb.id, path)

    async def stat(self, path: str) -> FileEntry:
        """What is at ``path`` (a link reported as a link); ``FileNotFoundError`` when missing."""
        self._sb._ensure_open()
        return await self._sb.provider.files.stat(self._sb.id, path)

    async def remove(self, path: str) -> None:
        """Remove a file, a link (not its target) or a whole directory tree."""
        self._sb._ensure_open()
        await self._sb.provider.files.remove(self._sb.id, path)

    async def rename(self, source: str, target: str) -> None:
        """Move ``source`` to ``target`` inside the instance."""
        self._sb._ensure_open()
        await self._sb.provider.files.rename(self._sb.id, source, target)

    async def mkdir(self, path: str, *, parents: bool = True, exist_ok: bool = True) -> None:
        """Make a directory (and its missing parents)."""
        self._sb._ensure_open()
        await self._sb.provider.files.mkdir(self._sb.id, path, parents=parents, exist_ok=exist_ok)

    async def read(self, path: str) -> bytes:
        """The file's bytes (as ``read_file``)."""
        return await self._sb.read_file(path)

    async def write(self, path: str, data: bytes | str) -> None:
        """Write bytes or UTF-8 text exactly (as ``write_file``)."""
        await self._sb.write_file(path, data)


class Files:
    """Blocking twin of :class:`AsyncFiles`, over praisonai's portal loop."""

    def __init__(self, inner: AsyncFiles) -> None:
        self._inner = inner

    def list(self, path: str = ".", depth: int = 1) -> list[FileEntry]:
        return _portal.call(self._inner.list, path, depth)

    def exists(self, path: str) -> bool:
        return _portal.call(self._inner.exists, path)

    def stat(self, path: str) -> FileEntry:
        return _portal.call(self._inner.stat, path)

    def remove(self, path: str) -> None:
        _portal.call(self._inner.remove, path)

    def rename(self, source: str, target: str) -> None:
        _portal.call(self._inner.rename, source, target)

    def mkdir(self, path: str, *, parents: bool = True, exist_ok: bool = True) -> None:
        _portal.call(lambda: self._inner.mkdir(path, parents=parents, exist_ok=exist_ok))

    def read(self, path: str) -> bytes:
        return _portal.call(self._inner.read, path)

    def write(self, path: str, data: bytes | str) -> None:
        _portal.call(self._inner.write, path, data)
