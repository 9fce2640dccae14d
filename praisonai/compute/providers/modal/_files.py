"""Uploads and downloads: a downloaded file through ``sb.filesystem`` (bytes over exec stdout,
never a command line), a directory tree as a tar stream through an exec's stdin/stdout. An uploaded
file goes through the helper, as ``write_file`` does: Modal's ``write_bytes`` (its fs-tools)
writes in place, so a transfer cut short leaves half a file where the old one was."""

from __future__ import annotations

import io
import posixpath
import shlex
import tarfile
from pathlib import Path
from typing import Any

from praisonai._errors import ExecError, PathNotFoundError
from praisonai.compute import _tar
from praisonai.compute.providers.modal._sdk import translated


def absolute(path: str, workdir: str) -> str:
    return posixpath.normpath(posixpath.join(workdir, path))


async def read(sb: Any, path: str) -> bytes:
    with translated("read_file", path):
        data: bytes = await sb.filesystem.read_bytes.aio(path)
    return data


async def _tar_exec(sb: Any, script: str, stdin: bytes) -> bytes:
    with translated("transfer"):
        proc = await sb.exec.aio("sh", "-c", script, text=False)
        proc.stdin.write(stdin)
        proc.stdin.write_eof()
        await proc.stdin.drain.aio()
        out: bytes = await proc.stdout.read.aio()
        err: bytes = await proc.stderr.read.aio()
        code = await proc.wait.aio()
    if code == 2:
        raise PathNotFoundError(err.decode(errors="replace").strip(), op="transfer")
    if code:
        raise ExecError(
            f"tar in the sandbox failed ({code}): {err.decode(errors='replace').strip()}", op="transfer"
        )
    return out


async def upload(sb: Any, local: Path, remote: str) -> None:
    """A directory tree, unpacked by ``tar`` over what is there (a file of the tree is written in
    place: a reader can see it half-written); a single file goes through the helper instead."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(local, arcname=".")
    q = shlex.quote(remote)
    await _tar_exec(sb, f"mkdir -p {q} && tar -x -C {q}", buf.getvalue())


async def download(sb: Any, remote: str, local: Path) -> None:
    try:
        data = await read(sb, remote)
    except IsADirectoryError:
        q = shlex.quote(remote)
        tarball = await _tar_exec(sb, f"tar -c -C {q} .", b"")
        _tar.unpack_to([tarball], local, remote)  # checked whole before anything is written
        return
    local.parent.mkdir(parents=True, exist_ok=True)
    local.write_bytes(data)
