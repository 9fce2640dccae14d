"""The ``local`` provider's file operations on the host side of a workspace (blocking: the
provider calls them in worker threads)."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from praisonai import _limits
from praisonai._errors import ConfigError, PathNotFoundError


def read_bytes(host: Path, shown: str) -> bytes:
    """The file's bytes. Opened without blocking and checked before reading: a FIFO would block
    forever and a device (``/dev/zero``) never end, so only regular files are read, and at most
    ``MAX_READ_BYTES`` of them (a file growing while it is read is caught by the bounded read)."""
    limit = _limits.MAX_READ_BYTES
    try:
        fd = os.open(host, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise PathNotFoundError(f"no such file in the instance: {shown}", op="read_file") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(f"{shown} is a directory")
        if not stat.S_ISREG(info.st_mode):
            kind = "a FIFO, device or socket"
            raise ConfigError(
                f"{shown} is not a regular file ({kind}); read_file reads regular files only", op="read_file"
            )
        with open(fd, "rb", closefd=False) as f:
            data = b"" if info.st_size > limit else f.read(limit + 1)
    finally:
        os.close(fd)
    if info.st_size > limit or len(data) > limit:
        raise ValueError(f"{shown} is larger than {limit} bytes; use download")
    return data


def write_bytes(host: Path, data: bytes) -> None:
    host.parent.mkdir(parents=True, exist_ok=True)
    host.write_bytes(data)


def copy(source: Path, target: Path) -> None:
    if source.is_dir():
        shutil.copytree(source, target, symlinks=True, dirs_exist_ok=True)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
