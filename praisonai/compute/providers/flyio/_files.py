"""Files in a Fly Machine through the exec endpoint (Fly has no file API, cloud-sdks.md §5.5):
base64 in the exec's ``stdin`` for writes (never on a command line) and in its answer for reads,
``CHUNK`` bytes per exec since the body limits are undocumented; trees as a tar written and read
the same way.

Files act with the instance's command user's rights (``compute.separation``): reads and writes go
through perl switching only its effective uid (so no command can kill, trace or open it), trees
through ``tar`` started as that user, while what frames them (archives in transit, the read's
buffer) stays in the root-owned ``JOBS_DIR``.
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
from praisonai.compute import _tar, separation
from praisonai.compute.providers.flyio import _exec
from praisonai.runtime.partial import partial_beside

CHUNK = 512 * 1024  # file bytes per exec: stdin and answer sizes are undocumented


class FlyFiles:
    """``_read``/``_write``/``_upload``/``_download`` over ``_run_script``; the provider brings
    ``_run_script`` (one exec of a script, as root, its stdout), ``_path`` (a path in the machine)
    and ``_command_user`` (whose rights files are read and written with; ``None``: root's)."""

    async def _run_script(self, instance_id: str, script: str, wait_s: float, op: str = "exec") -> str:
        raise NotImplementedError

    async def _path(self, instance_id: str, path: str, op: str) -> str:
        raise NotImplementedError

    async def _command_user(self, instance_id: str) -> str | None:
        raise NotImplementedError

    async def _read(self, instance_id: str, path: str) -> bytes:
        target = await self._path(instance_id, path, "read_file")
        return await self._get(instance_id, target, path, await self._command_user(instance_id))

    async def _get(self, instance_id: str, target: str, shown: str, user: str | None) -> bytes:
        """The bytes of ``target``, read ``CHUNK`` bytes per exec with ``user``'s rights."""
        parts: list[bytes] = []
        offset, size = 0, None
        while size is None or offset < size:
            said = await self._run_script(instance_id, _read_script(target, offset, user), 0, "read_file")
            kind, _, rest = said.partition("\n")
            if kind == "N":
                raise PathNotFoundError(f"no such file in the Fly machine: {shown}", op="read_file")
            if kind == "D":
                raise IsADirectoryError(f"{shown} is a directory in the Fly machine")
            if kind.startswith("P"):
                raise PermissionError(f"{shown} cannot be read by the commands' user in the Fly machine")
            size = int(kind.split()[1])
            parts.append(base64.b64decode("".join(rest.split())))
            offset += len(parts[-1])
            if not parts[-1] and offset < size:
                raise ExecError(f"{shown} shrank while it was read", op="read_file")
        return b"".join(parts)

    async def _write(self, instance_id: str, path: str, data: bytes) -> None:
        target = await self._path(instance_id, path, "write_file")
        await self._put(instance_id, target, data, path, await self._command_user(instance_id))

    async def _put(self, instance_id: str, target: str, data: bytes, shown: str, user: str | None) -> None:
        """Chunks appended to a new file beside ``target`` with ``user``'s rights, which the last
        exec renames over it (keeping a replaced file's mode): a reader sees the old file or the
        new one, and a write that fails half-way removes its new file."""
        part = partial_beside(target)
        try:
            for start in range(0, max(1, len(data)), CHUNK):
                last = start + CHUNK >= len(data)
                chunk = data[start : start + CHUNK]
                script = _write_script(target, part, chunk, start == 0, len(data) if last else None, user)
                said = (await self._run_script(instance_id, script, 0, "write_file")).strip()
                _check_written(said, shown)
        except BaseException:
            with contextlib.suppress(Exception):
                await self._run_script(instance_id, f"rm -f -- {shlex.quote(part)}\n", 0, "write_file")
            raise

    async def _upload(self, instance_id: str, local: Path, remote: str) -> None:
        target = await self._path(instance_id, remote, "upload")
        user = await self._command_user(instance_id)
        tar = await anyio.to_thread.run_sync(_tar.pack_path, local, posixpath.basename(target) or "root")
        archive = f"{_exec.JOBS_DIR}/xfer-{uuid.uuid4().hex}.tar"
        await self._put(instance_id, archive, tar, remote, None)  # root's, in transit
        q = shlex.quote
        unpack = separation.dropped(
            user,
            ["/bin/sh", "-c", 'mkdir -p -- "$1" && exec tar -xf - -C "$1"', "sh", posixpath.dirname(target)],
        )
        script = (
            (separation.check(user) if user else "")
            + f'umask "$1"; {shlex.join(unpack)} < {q(archive)}; rc=$?; rm -f -- {q(archive)}; '
            "[ $rc = 0 ] || echo failed\n"
        )
        if "failed" in await self._run_script(instance_id, script, 0, "upload"):
            raise ExecError(f"could not unpack the upload at {remote} in the Fly machine", op="upload")

    async def _download(self, instance_id: str, remote: str, local: Path) -> None:
        target = await self._path(instance_id, remote, "download")
        user = await self._command_user(instance_id)
        q = shlex.quote
        archive = f"{_exec.JOBS_DIR}/xfer-{uuid.uuid4().hex}.tar"
        pack = separation.dropped(
            user, ["tar", "-cf", "-", "-C", posixpath.dirname(target), posixpath.basename(target)]
        )
        script = (
            (separation.check(user) if user else "")
            + f"if [ -d {q(target)} ]; then {shlex.join(pack)} > {q(archive)} && echo D; "
            f"elif [ -f {q(target)} ]; then echo F; else echo N; fi\n"
        )
        kind = (await self._run_script(instance_id, script, 0, "download")).strip()
        if kind == "N":
            raise PathNotFoundError(f"no such file or directory in the instance: {remote}", op="download")
        if kind == "F":
            data = await self._get(instance_id, target, remote, user)
            local.parent.mkdir(parents=True, exist_ok=True)
            await anyio.Path(local).write_bytes(data)
            return
        try:
            tar = await self._get(instance_id, archive, remote, None)
        finally:
            await self._run_script(instance_id, f"rm -f -- {q(archive)}\n", 0, "download")
        await anyio.to_thread.run_sync(_tar.unpack_to, [tar], local, remote)


def _read_script(target: str, offset: int, user: str | None) -> str:
    """Says D (a directory), N (no file), P (the user may not read it), or ``F <size>`` then up
    to CHUNK bytes from ``offset``, base64."""
    t = shlex.quote(target)
    head = f"if [ -d {t} ]; then echo D; elif [ ! -f {t} ]; then echo N; else "
    if user is None:
        return head + f"echo F $(wc -c < {t}); tail -c +{offset + 1} {t} | head -c {CHUNK} | base64; fi\n"
    got = f"{_exec.JOBS_DIR}/.r.$$"  # the chunk, in root's directory: no command can change it
    read = separation.as_user(user, separation.PERL_READ, t, str(offset), str(CHUNK))
    return (
        separation.check(user)
        + head
        + (
            # the size without opening the file: a FIFO put there after the read cannot stall us
            f"{read} > {got}; s=$?; if [ $s = 0 ]; then echo F $(find -H {t} -maxdepth 0 -printf %s); "
            f"base64 < {got}; "
            f"else echo P $s; fi; rm -f {got}; fi\n"
        )
    )


def _write_script(
    target: str, part: str, chunk: bytes, first: bool, size: int | None, user: str | None
) -> str:
    """Writes ``chunk`` to ``part`` (made when ``first``), and with ``size`` (the last chunk)
    puts it in place of ``target``; says ``S <status>`` (``separation.PERL_WRITE``'s), with why before it."""
    q = shlex.quote
    b64 = base64.encodebytes(chunk).decode()
    if user is not None:
        words = [q(target), q(part), "new" if first else "add", *([] if size is None else [str(size)])]
        write = separation.as_user(user, separation.PERL_WRITE, *words)
        return (
            separation.check(user)
            + f"umask \"$1\"; base64 -d <<'PRAISONAI_EOF' | {write} 2>&1; echo S $?\n{b64}PRAISONAI_EOF\n"
        )
    script = f'mkdir -p -- "$(dirname -- {q(target)})" || {{ echo S 1; exit 0; }}\n'
    script += f"base64 -d {'>' if first else '>>'} {q(part)} <<'PRAISONAI_EOF'\n{b64}PRAISONAI_EOF\n"
    if size is not None:
        script += (
            f"if [ -d {q(target)} ]; then rm -f -- {q(part)}; echo S 4; exit 0; fi\n"
            f"[ ! -f {q(target)} ] || chmod --reference={q(target)} -- {q(part)} 2>/dev/null\n"
            f"mv -fT -- {q(part)} {q(target)}\n"
        )
    return script + "echo S $?\n"


def _check_written(said: str, shown: str) -> None:
    """Raise what a write script's last line ``S <status>`` says went wrong (see PERL_WRITE)."""
    why, _, last = said.rpartition("\n")
    status = last.split()[1] if last.startswith("S ") and len(last.split()) > 1 else last
    if status == "0":
        return
    if status == "4":
        raise IsADirectoryError(f"{shown} is a directory in the Fly machine")
    if status == "1" and "Permission denied" in why:
        raise PermissionError(f"{shown} cannot be written by the commands' user in the Fly machine")
    what = "was cut short" if status == "5" else f"failed ({why.strip()[-200:] or status})"
    raise ExecError(f"the write of {shown} in the Fly machine {what}", op="write_file")
