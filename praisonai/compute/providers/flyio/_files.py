"""Files in a Fly Machine through the exec endpoint (Fly has no file API, cloud-sdks.md §5.5):
base64 in the exec's ``stdin`` for writes (never on a command line) and in its answer for reads,
``CHUNK`` bytes per exec since the body limits are undocumented; trees as a tar written and read
the same way.
"""

from __future__ import annotations

import base64
import contextlib
import posixpath
import shlex
import uuid
from pathlib import Path

import anyio

from praisonai._errors import ExecError, PathNotFoundError
from praisonai.compute import _tar
from praisonai.compute.providers.flyio import _exec
from praisonai.runtime.partial import partial_beside

CHUNK = 512 * 1024  # file bytes per exec: stdin and answer sizes are undocumented
_XFER_DIR = "/tmp/.praisonai-xfer"


class FlyFiles:
    """``_read``/``_write``/``_upload``/``_download`` over ``_run_script``; the provider brings
    ``_run_script`` (one exec of a script, its stdout) and ``_path`` (a path in the machine)."""

    async def _run_script(self, instance_id: str, script: str, wait_s: float, op: str = "exec") -> str:
        raise NotImplementedError

    async def _path(self, instance_id: str, path: str, op: str) -> str:
        raise NotImplementedError

    async def _read(self, instance_id: str, path: str) -> bytes:
        target = shlex.quote(await self._path(instance_id, path, "read_file"))
        parts: list[bytes] = []
        offset, size = 0, None
        while size is None or offset < size:
            script = (
                f"if [ -d {target} ]; then echo D; elif [ ! -f {target} ]; then echo N; else "
                f"echo F $(wc -c < {target}); tail -c +{offset + 1} {target} | head -c {CHUNK} | base64; fi\n"
            )
            said = await self._run_script(instance_id, script, 0, "read_file")
            kind, _, rest = said.partition("\n")
            if kind == "N":
                raise PathNotFoundError(f"no such file in the Fly machine: {path}", op="read_file")
            if kind == "D":
                raise IsADirectoryError(f"{path} is a directory in the Fly machine")
            size = int(kind.split()[1])
            parts.append(base64.b64decode("".join(rest.split())))
            offset += len(parts[-1])
            if not parts[-1] and offset < size:
                raise ExecError(f"{path} shrank while it was read", op="read_file")
        return b"".join(parts)

    async def _write(self, instance_id: str, path: str, data: bytes) -> None:
        """Chunks appended to a new file beside ``path``, which the last exec renames over it
        (keeping a replaced file's mode): a reader sees the old file or the new one, and a write
        that fails half-way removes its new file."""
        target = await self._path(instance_id, path, "write_file")
        part = shlex.quote(partial_beside(target))
        q = shlex.quote(target)
        try:
            for start in range(0, max(1, len(data)), CHUNK):
                redirect = f"{'>' if start == 0 else '>>'} {part}"
                script = f'mkdir -p -- "$(dirname -- {q})" || exit 1\n'
                script += _exec.heredoc(data[start : start + CHUNK], redirect)
                if start + CHUNK >= len(data):
                    script += (
                        f"if [ -d {q} ]; then rm -f -- {part}; echo D; exit 0; fi\n"
                        f"[ ! -f {q} ] || chmod --reference={q} -- {part} 2>/dev/null\n"
                        f"mv -fT -- {part} {q}\n"
                    )
                if (await self._run_script(instance_id, script, 0, "write_file")).strip() == "D":
                    raise IsADirectoryError(f"{path} is a directory in the Fly machine")
        except BaseException:
            with contextlib.suppress(Exception):
                await self._run_script(instance_id, f"rm -f -- {part}\n", 0, "write_file")
            raise

    async def _upload(self, instance_id: str, local: Path, remote: str) -> None:
        target = await self._path(instance_id, remote, "upload")
        tar = await anyio.to_thread.run_sync(_tar.pack_path, local, posixpath.basename(target) or "root")
        archive = f"{_XFER_DIR}/{uuid.uuid4().hex}.tar"
        await self._write(instance_id, archive, tar)
        q = shlex.quote
        parent = q(posixpath.dirname(target))
        script = (
            f"mkdir -p -- {parent} && tar -xf {q(archive)} -C {parent}; rc=$?; "
            f"rm -f -- {q(archive)}; [ $rc = 0 ] || echo failed\n"
        )
        if "failed" in await self._run_script(instance_id, script, 0, "upload"):
            raise ExecError(f"could not unpack the upload at {remote} in the Fly machine", op="upload")

    async def _download(self, instance_id: str, remote: str, local: Path) -> None:
        target = await self._path(instance_id, remote, "download")
        q = shlex.quote
        archive = f"{_XFER_DIR}/{uuid.uuid4().hex}.tar"
        script = (
            f"if [ -d {q(target)} ]; then mkdir -p {_XFER_DIR} && tar -cf {q(archive)} -C "
            f"{q(posixpath.dirname(target))} {q(posixpath.basename(target))} && echo D; "
            f"elif [ -f {q(target)} ]; then echo F; else echo N; fi\n"
        )
        kind = (await self._run_script(instance_id, script, 0, "download")).strip()
        if kind == "N":
            raise PathNotFoundError(f"no such file or directory in the instance: {remote}", op="download")
        if kind == "F":
            data = await self._read(instance_id, target)
            local.parent.mkdir(parents=True, exist_ok=True)
            await anyio.Path(local).write_bytes(data)
            return
        tar = await self._read(instance_id, archive)
        await self._run_script(instance_id, f"rm -f -- {q(archive)}\n", 0, "download")
        await anyio.to_thread.run_sync(_tar.unpack_to, [tar], local, remote)
