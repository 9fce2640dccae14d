"""How many bytes a file transfer has moved so far, for whoever shows its progress (the bar of
``praisonai sandbox cp``). The code that moves the bytes counts them with :func:`moved`, in any
thread of the transfer's context; the watcher :func:`watching` set hears each step. When nobody
watches, counting costs one context-variable lookup."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import BinaryIO

_watcher: ContextVar[Callable[[int], None] | None] = ContextVar("praisonai_transfer", default=None)


@contextlib.contextmanager
def watching(on_bytes: Callable[[int], None]) -> Iterator[None]:
    """While the block runs, ``on_bytes(count)`` hears each step of a transfer made in this
    context (worker threads started from it included); it may be called from any thread."""
    token = _watcher.set(on_bytes)
    try:
        yield
    finally:
        _watcher.reset(token)


def moved(count: int) -> None:
    """``count`` more bytes of the transfer under way crossed (sent, or received)."""
    on_bytes = _watcher.get()
    if on_bytes is not None and count:
        on_bytes(count)


@contextlib.contextmanager
def counted_at_the_end(local: Path) -> Iterator[None]:
    """For a transfer whose code may count nothing as it goes (a vendor SDK's one call, a local
    copy): when the block counted no byte, the size of ``local`` (the source uploaded, or the
    result downloaded) counts once it has ended well."""
    outer = _watcher.get()
    if outer is None:
        yield
        return
    seen = 0

    def forward(count: int) -> None:
        nonlocal seen
        seen += count
        outer(count)

    with watching(forward):
        yield
    if not seen:
        moved(tree_size(local))


def tree_size(path: Path) -> int:
    """The bytes of the regular files at ``path``, a file or a tree (links are not followed)."""
    if not path.is_dir():
        return path.lstat().st_size if path.is_file() else 0
    total = 0
    for top, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                info = os.lstat(os.path.join(top, name))
                total += info.st_size if stat.S_ISREG(info.st_mode) else 0
    return total


class CountedReader:
    """``stream`` (``size`` bytes from where it is) for a consumer that reads it in pieces, an
    HTTP client sending it: each piece counts as moved when it is read."""

    def __init__(self, stream: BinaryIO, size: int) -> None:
        self._stream, self._size = stream, size

    def read(self, size: int = -1) -> bytes:
        data = self._stream.read(size)
        moved(len(data))
        return data

    def __len__(self) -> int:  # a known length: sent with Content-Length, not chunked
        return self._size


def sftp_callback() -> Callable[[int, int], None]:
    """A paramiko ``put``/``get`` callback (bytes so far, file size) that counts what moved."""
    done = 0

    def progressed(so_far: int, size: int) -> None:
        nonlocal done
        moved(so_far - done)
        done = so_far

    return progressed
