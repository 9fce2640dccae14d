"""Reading a file a user points us at (an environment file, a kubeconfig, a Modal config, TLS
certificates, an ssh_config): only a regular file, checked on the descriptor that is read.

A FIFO's ``open()`` blocks until a writer comes (forever), a device such as ``/dev/zero`` never
ends, and a directory cannot be read: each would hang or crash a command that only wanted a few
kilobytes of configuration. So the file is opened with ``O_NONBLOCK`` (which makes opening a FIFO
return at once), ``fstat`` of that same descriptor decides, and the bytes are read from it: there
is no check-then-reopen for anything to swap a file in between.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable, Iterator

from praisonai._errors import ConfigError
from praisonai._limits import MAX_CONFIG_FILE_BYTES


def read_regular_file(
    path: str | os.PathLike[str],
    what: str,
    *,
    limit: int = MAX_CONFIG_FILE_BYTES,
    on_open: Callable[[int], None] | None = None,
) -> bytes:
    """The bytes of ``path``, a regular file of at most ``limit`` bytes (symlinks to one are
    followed: a user's own config may be a link into their dotfiles).

    ``what`` names the file in messages ("environment file", "kubeconfig"). ``on_open`` is
    called with the descriptor before anything is read, to check the very file opened (where a
    followed link led); whatever it raises is raised.

    Raises:
        ConfigError: it is a FIFO, socket, device or directory, or larger than ``limit``; one
            sentence naming ``what``, the path and what to do.
        OSError: it cannot be opened (``FileNotFoundError``, ``PermissionError``…), untouched so
            the caller can say "no such file" its own way.
    """
    with _opened(path, what) as fd:
        if on_open is not None:
            on_open(fd)
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 16, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    if size > limit:
        raise ConfigError(
            f"{what} {os.fspath(path)} is larger than {limit} bytes; point it at the right file",
            op="config",
        )
    return b"".join(chunks)


def check_regular_file(path: str | os.PathLike[str], what: str) -> None:
    """Refuse ``path`` unless it is a regular file, for a library that only takes a path and
    opens it itself (the ssl module's certificates, the ssh binary's ``-F``): the best that can be
    done there. Raises as :func:`read_regular_file`."""
    with _opened(path, what):
        pass


@contextlib.contextmanager
def _opened(path: str | os.PathLike[str], what: str) -> Iterator[int]:
    """A read-only descriptor of ``path``, refused unless it is a regular file; closed after."""
    shown = os.fspath(path)
    if "\0" in shown:
        raise ConfigError(f"{what} path {shown!r} contains a NUL byte; give the real path", op="config")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno in (errno.ENAMETOOLONG, errno.ELOOP):
            raise ConfigError(f"{what} {shown[:200]}: {exc.strerror}; give a shorter, real path") from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise ConfigError(
                f"{what} {shown} is {kind_of(mode)}, not a regular file; point it at a regular file",
                op="config",
            )
        os.set_blocking(fd, True)  # a regular file never blocks; reads now see every byte
        yield fd
    finally:
        os.close(fd)


def kind_of(mode: int) -> str:
    """What a non-regular file is, in words: "a FIFO", "a directory", "a device"…"""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a file"
