"""Files on E2B: whole files as bytes both ways (``files.read`` defaults to text: always ask for
``format="bytes"``, which returns a ``bytearray``), trees as one tar archive each way (E2B has no
directory transfer), unpacked by ``tar`` in the sandbox or here."""

from __future__ import annotations

import contextlib
import io
import shlex
import tarfile
import uuid
from pathlib import Path
from typing import Any

import anyio.to_thread

from praisonai import _limits
from praisonai._errors import ExecError, PathNotFoundError
from praisonai._types import ExecRequest
from praisonai.compute import _tar
from praisonai.compute.providers.e2b import _exec
from praisonai.compute.providers.e2b._errors import translated
from praisonai.runtime.partial import partial_beside


async def read(sandbox: Any, instance_id: str, path: str) -> bytes:
    with translated("read_file", instance_id, path):
        data = await sandbox.files.read(path, format="bytes")
    if len(data) > _limits.MAX_READ_BYTES:
        raise ValueError(f"{path} is larger than {_limits.MAX_READ_BYTES} bytes; use download")
    return bytes(data)


async def read_range(sandbox: Any, instance_id: str, path: str, offset: int, limit: int | None) -> bytes:
    """Bytes ``offset`` to ``offset + limit`` of a file (to its end when ``limit`` is None); a
    bounded read stops downloading once it has them."""
    with translated("read_process_output", instance_id, path):
        if limit is None:
            return bytes(await sandbox.files.read(path, format="bytes"))[offset:]
        got = bytearray()
        async with await sandbox.files.read(path, format="stream") as chunks:
            async for chunk in chunks:
                got += chunk
                if len(got) >= offset + limit:
                    break
    return bytes(got[offset : offset + limit])


async def write(sandbox: Any, instance_id: str, path: str, data: bytes) -> None:
    """``data`` to a new file beside ``path`` (envd's upload, which makes the parents), renamed over
    it (envd's Move, ``rename(2)``): a reader sees the old file or the new one, never an upload cut
    half-way (envd writes its file in place as the bytes come) nor a mix of two writers, and a
    link at ``path`` is replaced, never written through. A replaced file keeps its mode: envd has
    no chmod, so one command sets it when the new file's differs."""
    from e2b import FileNotFoundException, FileType

    partial = partial_beside(path)
    with translated("write_file", instance_id, path):
        try:
            replaced = await sandbox.files.get_info(path)  # lstat, but typed as what a link points at
        except FileNotFoundException:
            replaced = None
        if replaced is not None and replaced.type == FileType.DIR:
            raise IsADirectoryError(f"{path} is a directory")
    try:
        with translated("write_file", instance_id, path):
            await sandbox.files.write(partial, data, use_octet_stream=True)
            if replaced is not None and replaced.type == FileType.FILE:
                made = await sandbox.files.get_info(partial)
                if made.mode != replaced.mode:
                    await _sh(
                        sandbox,
                        instance_id,
                        f"chmod {replaced.mode:o} -- {shlex.quote(partial)}",
                        "write_file",
                    )
            await sandbox.files.rename(partial, path)
    except BaseException:
        with contextlib.suppress(Exception):
            await sandbox.files.remove(partial)
        raise


async def _sh(sandbox: Any, instance_id: str, command: str, op: str) -> str:
    result = await _exec.run(sandbox, instance_id, ExecRequest(command, timeout=None), "/")
    if result.exit_code != 0:
        raise ExecError(f"{op} failed in the e2b instance: {result.stderr.strip()}", op=op)
    return str(result.stdout)


async def upload(sandbox: Any, instance_id: str, local: Path, remote: str) -> None:
    if local.is_file():
        await write(sandbox, instance_id, remote, await anyio.Path(local).read_bytes())
        return
    archive = await anyio.to_thread.run_sync(_pack, local)
    staged = f"/tmp/.praisonai-up-{uuid.uuid4().hex}.tar"
    await write(sandbox, instance_id, staged, archive)
    target, tar = shlex.quote(remote), shlex.quote(staged)
    script = f"mkdir -p -- {target} && tar -xf {tar} -C {target}; s=$?; rm -f {tar}; exit $s"
    await _sh(sandbox, instance_id, script, "upload")


async def download(sandbox: Any, instance_id: str, remote: str, local: Path) -> None:
    source = shlex.quote(remote)
    kind = (
        await _sh(
            sandbox,
            instance_id,
            f"if [ -d {source} ]; then echo d; elif [ -e {source} ]; then echo f; else echo -; fi",
            "download",
        )
    ).strip()
    if kind == "-":
        raise PathNotFoundError(f"no such file or directory in the instance: {remote}", op="download")
    if kind == "f":
        data = await read(sandbox, instance_id, remote)
        local.parent.mkdir(parents=True, exist_ok=True)
        await anyio.Path(local).write_bytes(data)
        return
    staged = shlex.quote(f"/tmp/.praisonai-down-{uuid.uuid4().hex}.tar")
    await _sh(sandbox, instance_id, f"tar -cf {staged} -C {source} .", "download")
    try:
        with translated("download", instance_id, remote):
            archive = bytes(await sandbox.files.read(staged.strip("'"), format="bytes"))
    finally:
        await _sh(sandbox, instance_id, f"rm -f {staged}", "download")
    await anyio.to_thread.run_sync(_tar.unpack_to, [archive], local, remote)  # checked whole first


def _pack(directory: Path) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.add(directory, arcname=".")
    return buffer.getvalue()
