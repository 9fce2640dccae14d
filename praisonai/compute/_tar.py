"""Tar streams for providers whose file API moves archives (docker's put/get_archive)."""

from __future__ import annotations

import io
import posixpath
import tarfile
import time
from collections.abc import Iterable
from pathlib import Path

from praisonai._limits import MAX_READ_BYTES


def pack_bytes(path: str, data: bytes) -> bytes:
    """A tar holding one file at ``path`` (relative to the archive root), mode 0644, mtime now."""
    info = tarfile.TarInfo(path.lstrip("/"))
    info.size, info.mode, info.mtime = len(data), 0o644, int(time.time())
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def pack_path(local: Path, arcname: str) -> bytes:
    """A tar of a local file or directory tree, stored under ``arcname``."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.add(str(local), arcname=arcname.lstrip("/"))
    return buffer.getvalue()


def unpack_single_file(chunks: Iterable[bytes], shown: str) -> bytes:
    """The bytes of the one regular file in a tar stream.

    Raises:
        IsADirectoryError: the archive holds a directory.
        ValueError: the file is larger than ``MAX_READ_BYTES``.
    """
    with tarfile.open(fileobj=_ChunkReader(chunks), mode="r|") as tar:
        for member in tar:
            if member.isdir():
                raise IsADirectoryError(f"{shown} is a directory")
            if member.size > MAX_READ_BYTES:
                raise ValueError(f"{shown} is larger than {MAX_READ_BYTES} bytes; use download")
            extracted = tar.extractfile(member)
            if extracted is None:
                raise IsADirectoryError(f"{shown} is not a regular file")
            return extracted.read()
    raise FileNotFoundError(shown)


def unpack_to(chunks: Iterable[bytes], local: Path) -> None:
    """Extract a tar stream whose top entry is a file or directory so that it lands at ``local``.

    Members are filtered for safety (no absolute paths, no ``..``, no devices, no links leaving
    the target), so a hostile instance cannot write outside ``local``.
    """
    local.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=_ChunkReader(chunks), mode="r|") as tar:
        top: str | None = None
        for member in tar:
            top = top or member.name.split("/", 1)[0]
            relative = posixpath.relpath(member.name, top)
            member.name = posixpath.normpath(posixpath.join(local.name, relative))
            tar.extract(member, path=str(local.parent), filter="data")


class _ChunkReader(io.RawIOBase):
    """A file object over an iterator of byte chunks, for streaming tar reads."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = iter(chunks)
        self._pending = memoryview(b"")  # a view, so consuming it copies nothing

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        while not self._pending:
            try:
                self._pending = memoryview(next(self._chunks))
            except StopIteration:
                return 0
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size
