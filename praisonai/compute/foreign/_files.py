"""Whole files through a foreign provider's one call, ``execute``: read and written in chunks
as base64 (text small enough goes as one heredoc), each chunk one command (see ``_shell``).

The provider passes its ``checked`` command runner (stdout, or the failure as our error) and
keeps the rest: paths, ids, its object's own upload/download methods.
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Awaitable, Callable

import anyio

from praisonai import _limits
from praisonai._errors import PathNotFoundError
from praisonai.compute.foreign import _shell
from praisonai.runtime.partial import partial_beside

#: ``checked(command)``: run one file-operation command, return its stdout or raise.
Checked = Callable[[str], Awaitable[str]]


async def read_bytes(checked: Checked, target: str, shown: str) -> bytes:
    """The file at ``target`` (absolute), ``shown`` as ``path`` in errors.

    Raises:
        IsADirectoryError, PathNotFoundError: not a file. ValueError: larger than
            ``MAX_READ_BYTES`` (use download).
    """
    kind = (await checked(_shell.probe(target))).split()
    if kind == ["dir"]:
        raise IsADirectoryError(f"{shown} is a directory")
    if kind[:1] != ["file"] or len(kind) != 2 or not kind[1].isdigit():
        raise PathNotFoundError(f"no such file {shown}", op="read")
    size = int(kind[1])
    if size > _limits.MAX_READ_BYTES:
        raise ValueError(f"{shown} is larger than {_limits.MAX_READ_BYTES} bytes; use download")
    chunks = []
    for offset in range(0, size, _limits.FOREIGN_READ_CHUNK_BYTES):
        count = min(_limits.FOREIGN_READ_CHUNK_BYTES, size - offset)
        encoded = await checked(_shell.read_chunk(target, offset, count))
        chunks.append(base64.b64decode("".join(encoded.split())))
    return b"".join(chunks)


async def write_bytes(
    checked: Checked, remove: Callable[[str], Awaitable[object]], target: str, data: bytes
) -> None:
    """Small text as one heredoc; anything else in base64 chunks to a temporary file in the
    same directory, renamed onto ``target`` once whole (all or nothing: ``remove`` deletes the
    temporary file on failure)."""
    text = _shell.inline_text(data)
    if text is not None:
        await checked(_shell.heredoc_write(target, text, _shell.new_delimiter(text)))
        return
    temp = partial_beside(target)
    try:
        await checked(_shell.chunk_start(target, temp))
        for offset in range(0, len(data), _limits.FOREIGN_INLINE_BYTES):
            await checked(_shell.chunk_append(temp, data[offset : offset + _limits.FOREIGN_INLINE_BYTES]))
        await checked(_shell.chunk_finish(temp, target))
    except BaseException:
        with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
            await remove(temp)
        raise


__all__ = ["Checked", "read_bytes", "write_bytes"]
