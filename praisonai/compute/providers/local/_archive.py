"""A workspace upload's tar extracted into a local instance with the workspace's own file
operations: every entry made beneath the workspace's fd, never through a link (a link in the
archive is made as a link, never followed), files copied in blocks from the stream."""

from __future__ import annotations

import os
import posixpath
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, BinaryIO

from praisonai.compute.providers.local import _files
from praisonai.compute.providers.local._beneath import open_dir, opened


def unpack(archive: Path, workspace: Path, parts: list[str], shown: str) -> None:
    """Extract the tar file ``archive`` into the directory ``parts`` of the workspace."""
    with (
        opened(_files.workspace_fd(workspace)) as root,
        opened(open_dir(root, parts, shown, create=True)) as target,
        tarfile.open(archive, mode="r|") as tar,
    ):
        for member in tar:
            names = posixpath.normpath(member.name).split("/")
            if member.name.startswith("/") or ".." in names:
                continue  # the workspace upload never writes these: skipped, never resolved
            where = posixpath.join(shown, member.name)
            if member.isdir():
                with opened(open_dir(target, names, where, create=True)):
                    pass
            elif member.issym():
                with opened(open_dir(target, names[:-1], where, create=True)) as parent:
                    _files._replace_link(member.linkname, names[-1], parent)
            elif member.isreg():
                source = tar.extractfile(member)
                assert source is not None
                _files._write_into(target, names, where, _filler(source, member.mode))


def _filler(source: IO[bytes], mode: int) -> Callable[[BinaryIO], object]:
    """Copy ``source`` into the new file and give it the archived permission bits (a script
    stays executable)."""
    copy = _files._copier(source)  # type: ignore[arg-type]

    def fill(out: BinaryIO) -> None:
        copy(out)
        os.fchmod(out.fileno(), mode & 0o777)

    return fill
