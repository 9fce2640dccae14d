"""Tar streams for providers whose file API moves archives (docker's put/get_archive)."""

from __future__ import annotations

import io
import posixpath
import tarfile
import tempfile
import time
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from pathlib import Path

from praisonai._errors import PathOutsideWorkspaceError
from praisonai._limits import MAX_READ_BYTES
from praisonai._transfer import moved


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


def unpack_to(chunks: Iterable[bytes], local: Path, shown: str = "") -> None:
    """Extract a tar stream made by an instance, whose top entry is a file or directory, so that
    it lands at ``local``.

    The instance made the archive, so nothing in it is trusted. It is spooled and checked whole
    before anything is written, so a refused archive leaves nothing behind: every member stays
    beneath ``local`` (no absolute name, no ``..``), none passes through a link of the archive
    (nothing is ever written through a link), and a link points inside the downloaded tree (else
    ``PathOutsideWorkspaceError``, one sentence). Extraction then applies tarfile's ``data``
    filter too; special files (devices, FIFOs) are skipped.
    """
    shown = shown or local.name
    with tempfile.TemporaryFile() as spool:
        for chunk in chunks:
            spool.write(chunk)
            moved(len(chunk))  # a download's progress: a streamed one's, as it arrives
        spool.seek(0)
        with tarfile.open(fileobj=spool, mode="r:") as tar:
            members = tar.getmembers()
            _rename_under(members, local.name)
            _check_members(members, local.name, shown)
            local.parent.mkdir(parents=True, exist_ok=True)
            try:
                tar.extractall(str(local.parent), members=members, filter=_skip_special)
            except tarfile.FilterError as exc:  # _check_members refuses these first: defence in depth
                raise _refused(shown, str(exc)) from None


def _rename_under(members: list[tarfile.TarInfo], top_name: str) -> None:
    """Rename members so the archive's top entry becomes ``top_name`` (docker names it after
    the instance's path, which may differ from the local one)."""
    top = members[0].name.split("/", 1)[0] if members else ""

    def renamed(name: str) -> str:
        return posixpath.normpath(posixpath.join(top_name, posixpath.relpath(posixpath.normpath(name), top)))

    for member in members:
        member.name = renamed(member.name)
        if member.islnk():  # a hard link names another member of the archive
            member.linkname = renamed(member.linkname)


def _check_members(members: list[tarfile.TarInfo], top: str, shown: str) -> None:
    """Refuse an archive that could write outside ``top`` or leave a link out of it."""
    inside = {member.name: member for member in members if member.name.startswith(top + "/")}
    links = {name[len(top) + 1 :] for name, member in inside.items() if member.issym() or member.islnk()}
    for member in members:
        if member.name != top and member.name not in inside:
            raise _refused(shown, f"its member {member.name!r} is outside the downloaded tree")
        name = member.name[len(top) + 1 :]
        parents = name.split("/")[:-1]
        if any("/".join(parents[:end]) in links for end in range(1, len(parents) + 1)):
            raise _refused(shown, f"its member {member.name!r} passes through a link")
        if member.issym() and not link_stays_inside(name, member.linkname, links):
            raise _refused(
                shown, f"{name!r} is a symbolic link out of the downloaded tree (to {member.linkname!r})"
            )
        if member.islnk() and member.linkname not in inside:
            raise _refused(shown, f"{name!r} is a hard link out of the downloaded tree")


def link_stays_inside(link: str, target: str, links: AbstractSet[str]) -> bool:
    """Whether the symbolic link ``link`` to ``target`` resolves inside the tree it is copied
    with, wherever that tree lands. Paths are relative to the tree's root; ``links`` are its
    links. Strict: the target may not be absolute, climb above the root, or pass through another
    link of the tree (whose own target would decide where it ends)."""
    if target.startswith("/"):
        return False
    where = link.split("/")[:-1]
    steps = [step for step in target.split("/") if step not in ("", ".")]
    for index, step in enumerate(steps):
        if step == "..":
            if not where:
                return False
            where.pop()
            continue
        where.append(step)
        if index < len(steps) - 1 and "/".join(where) in links:
            return False
    return True


def refuse_links_out(local: Path, links: Mapping[str, str], shown: str) -> None:
    """For a tree copied link by link to ``local`` (``links``: each copied link's path below it
    and its target): remove the links that lead out of the tree, judged once all are known (one
    link can make another leave), and refuse the download if there were any."""
    out = [where for where, pointed in links.items() if not link_stays_inside(where, pointed, links.keys())]
    for where in out:
        (local / where).unlink()  # our own copy: its directories are real ones we made
    if out:
        raise PathOutsideWorkspaceError(
            f"{shown}/{out[0]} is a symbolic link out of the downloaded tree (to {links[out[0]]}); "
            "download refuses it (not copied): remove or replace the link in the instance",
            op="download",
        )


def _skip_special(member: tarfile.TarInfo, path: str) -> tarfile.TarInfo | None:
    if member.isdev() or member.isfifo():
        return None
    return tarfile.data_filter(member, path)


def _refused(shown: str, why: str) -> PathOutsideWorkspaceError:
    return PathOutsideWorkspaceError(
        f"download of {shown} refused: {why}; nothing was written (remove or replace it in the instance)",
        op="download",
    )


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
