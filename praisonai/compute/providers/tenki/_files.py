"""Files in a Tenki sandbox through its Run stream as bytes both ways (``cat`` or perl out, stdin in
frames in, tar for trees): Tenki's own fs API only reaches paths under ``/home/tenki`` and our
working directory is anywhere. They act with the instance's command user's rights
(``compute.separation``): reads and writes through perl switching only its effective uid (so no
command can kill, trace or open it), trees through ``tar`` started as that user; the background
processes' spool is read as root.
"""

from __future__ import annotations

import posixpath
from pathlib import Path
from typing import Any

import anyio

from praisonai._errors import ExecError, PathNotFoundError
from praisonai._limits import ERROR_DETAIL_CHARS
from praisonai.compute import _tar, separation
from praisonai.runtime.partial import partial_beside

#: Reads a file (exit 2: missing, 3: a directory); writes stdin to one, parents made.
_KIND = '[ -d "$1" ] && exit 3; [ -f "$1" ] || exit 2; exec '
_READ = _KIND + 'cat -- "$1"'
#: stdin to the new file $2 beside $1 (``partial_beside``), renamed over $1 once it holds all $3
#: bytes (a reader never sees a mix of two writers, nor a write cut short); a replaced file keeps
#: its mode
_WRITE = (
    'mkdir -p -- "$(dirname -- "$1")" || exit 1\n'
    'if cat > "$2" && [ "$(wc -c < "$2")" -eq "$3" ]; then\n'
    '  [ ! -f "$1" ] || chmod "$(stat -c %a -- "$1")" -- "$2" 2>/dev/null\n'
    '  mv -f -- "$2" "$1" && exit 0\n'
    "fi\n"
    'rm -f -- "$2"; exit 1'
)


class TenkiFiles:
    """``_read``/``_write``/``_upload``/``_download`` over ``_raw``; the provider brings ``_raw``
    (one Run as root), ``_sandbox``, ``_path`` and ``_user`` (the sandbox's command user)."""

    async def _raw(self, sandbox: Any, argv: list[str], data: bytes | None, op: str) -> Any:
        raise NotImplementedError

    def _sandbox(self, instance_id: str, op: str) -> Any:
        raise NotImplementedError

    def _path(self, sandbox: Any, path: str) -> str:
        raise NotImplementedError

    @staticmethod
    def _user(sandbox: Any) -> str | None:
        return separation.user_of(sandbox.info.metadata)

    async def _read(self, instance_id: str, path: str) -> bytes:
        async with self._sandbox(instance_id, "read_file") as sandbox:
            return await self._get(sandbox, self._path(sandbox, path), path, self._user(sandbox))

    async def _read_spool(self, instance_id: str, path: str) -> bytes:
        async with self._sandbox(instance_id, "read_file") as sandbox:
            return await self._get(sandbox, path, path, None)

    async def _get(self, sandbox: Any, target: str, shown: str, user: str | None) -> bytes:
        """``target``'s bytes, read with ``user``'s rights (``None``: root's)."""
        if user is None:
            argv = ["sh", "-c", _READ, "sh", target]
        else:
            read = separation.as_user(user, separation.PERL_READ, '"$1"', "0")  # exit 1: it may not read it
            argv = ["/bin/sh", "-c", separation.check(user) + _KIND + read, "sh", target]
        result = await self._raw(sandbox, argv, None, "read_file")
        if result.exit_code in (2, 3):
            what = "no such file" if result.exit_code == 2 else "a directory, not a file"
            raise PathNotFoundError(f"{what} in the instance: {shown}", op="read_file")
        _refused(user, result, "read_file")
        if user is not None and result.exit_code == 1:
            raise PermissionError(f"{shown} cannot be read by the commands' user in the Tenki sandbox")
        _check(result, "read_file", shown)
        return bytes(result.stdout)

    async def _write(self, instance_id: str, path: str, data: bytes) -> None:
        async with self._sandbox(instance_id, "write_file") as sandbox:
            target, user = self._path(sandbox, path), self._user(sandbox)
            words = (target, partial_beside(target), str(len(data)))
            if user is None:
                argv = ["sh", "-c", _WRITE, "sh", *words]
            else:
                write = separation.as_user(user, separation.PERL_WRITE, '"$1"', '"$2"', "new", '"$3"')
                argv = ["/bin/sh", "-c", separation.check(user) + "exec " + write, "sh", *words]
            result = await self._raw(sandbox, argv, bytes(data), "write_file")
        _refused(user, result, "write_file")
        why = bytes(result.stderr).decode(errors="replace")
        if user is not None and result.exit_code == 4:
            raise IsADirectoryError(f"{path} is a directory in the Tenki sandbox")
        if user is not None and result.exit_code == 1 and "Permission denied" in why:
            raise PermissionError(f"{path} cannot be written by the commands' user in the Tenki sandbox")
        _check(result, "write_file", path)

    async def _upload(self, instance_id: str, local: Path, remote: str) -> None:
        async with self._sandbox(instance_id, "upload") as sandbox:
            target, user = self._path(sandbox, remote), self._user(sandbox)
            tar = await anyio.to_thread.run_sync(_tar.pack_path, local, posixpath.basename(target) or "root")
            script = 'mkdir -p -- "$1" && exec tar -xf - -C "$1"'
            argv = separation.apart(user, ["sh", "-c", script, "sh", posixpath.dirname(target)])
            result = await self._raw(sandbox, argv, tar, "upload")
        _refused(user, result, "upload")
        _check(result, "upload", remote)

    async def _download(self, instance_id: str, remote: str, local: Path) -> None:
        async with self._sandbox(instance_id, "download") as sandbox:
            target, user = self._path(sandbox, remote), self._user(sandbox)
            script = '[ -e "$1" ] || exit 2; exec tar -cf - -C "$(dirname -- "$1")" "$(basename -- "$1")"'
            argv = separation.apart(user, ["sh", "-c", script, "sh", target])
            result = await self._raw(sandbox, argv, None, "download")
        if result.exit_code == 2:
            raise PathNotFoundError(f"no such file or directory in the instance: {remote}", op="download")
        _refused(user, result, "download")
        _check(result, "download", remote)
        await anyio.to_thread.run_sync(_tar.unpack_to, [bytes(result.stdout)], local, remote)


def _refused(user: str | None, result: Any, op: str) -> None:
    """Raise the refusal's sentence when ``result`` is an instance that cannot switch to ``user``."""
    if separation.refused(user, result.exit_code, bytes(result.stderr).decode(errors="replace")):
        raise ExecError(separation.refusal(user or ""), op=op)


def _check(result: Any, op: str, path: str) -> None:
    """Raise what went wrong when a file Run failed."""
    if result.exit_code != 0 or result.timed_out:
        why = (
            bytes(result.stderr).decode(errors="replace").strip()[-ERROR_DETAIL_CHARS:]
            or f"exit code {result.exit_code}"
        )
        raise ExecError(f"{op} {path} failed in the Tenki sandbox: {why}", op=op)
