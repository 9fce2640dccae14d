"""Archives into a container, streamed: the engine's archive API reads the tar from a file in
blocks, so neither a workspace upload nor a plain ``upload`` holds a tree in memory."""

from __future__ import annotations

import posixpath
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO, Protocol

import anyio.to_thread

from praisonai._errors import ExecError
from praisonai._transfer import CountedReader
from praisonai._types import ExecResult
from praisonai.compute import _tar
from praisonai.compute.providers.docker._client import EngineCall, container_name, file_error, get_archive
from praisonai.runtime.partial import partial_name


def put_tar(api: Any, container: str, archive: BinaryIO | CountedReader, target: str, shown: str) -> None:
    """Extract the tar read from ``archive`` into the container's directory ``target``
    (blocking). The engine extracts inside the container's own filesystem."""
    import docker

    try:
        api.put_archive(container, target, archive)
    except docker.errors.APIError as exc:
        raise file_error(exc, shown) from None


def put_path(
    api: Any, container: str, local: Path, arcname: str, shown: str, user: str | None = None
) -> None:
    """``upload``: a tar of the local file or tree under ``arcname`` (relative to the
    container's root), spooled to a temporary file, then streamed to the engine (blocking);
    its files are ``user``'s (``"UID:GID"``, the commands'), else root's."""
    uid, _, gid = (user or "0:0").partition(":")

    def owned(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid, info.gid, info.uname, info.gname = int(uid), int(gid), "", ""
        return info

    with tempfile.TemporaryFile() as spool:
        with tarfile.open(fileobj=spool, mode="w|") as tar:
            tar.add(str(local), arcname=arcname.lstrip("/"), filter=owned)
        size = spool.tell()
        spool.seek(0)
        put_tar(api, container, CountedReader(spool, size), "/", shown)


def put_file(api: Any, container: str, archive: Path, target: str, shown: str) -> None:
    """:func:`put_tar` of the archive file ``archive`` (blocking)."""
    with archive.open("rb") as stream:
        put_tar(api, container, stream, target, shown)


class Execute(Protocol):
    """The provider's ``execute``, as the archives use it: an argv, as root or not."""

    async def __call__(self, instance_id: str, command: list[str], *, privileged: bool) -> ExecResult: ...


class Archives:
    """A ``DockerEngine``'s uploads and downloads through the engine's archive API, streamed.
    Built from the engine's blocking ``call``, its client (``connect``) and its ``execute`` (an
    uploaded file is put in place by a command, as root)."""

    def __init__(self, *, call: EngineCall, connect: Callable[[], Any], execute: Execute) -> None:
        self._call, self._connect, self._execute = call, connect, execute

    async def upload(self, instance_id: str, local: Path, target: str, shown: str, user: str | None) -> None:
        """``local`` at ``target`` in the container, its files ``user``'s. A tree is unpacked over
        what is there; one file goes in beside its target under a new name, then is renamed over
        it: whole or not at all, and seen under gVisor too (whose sandbox keeps its view of a file
        it has opened, and misses the engine replacing it)."""
        container = container_name(instance_id)
        if local.is_dir():
            await self._call(put_path, self._connect(), container, local, target, shown, user)
            return
        partial = posixpath.join(posixpath.dirname(target), partial_name())
        await self._call(put_path, self._connect(), container, local, partial, shown, user)
        # root's, as the engine's unpacking is
        placed = await self._execute(instance_id, ["mv", "-f", "--", partial, target], privileged=True)
        if placed.exit_code != 0:
            await self._execute(instance_id, ["rm", "-f", "--", partial], privileged=True)
            why = placed.stderr.strip()[-300:]
            raise ExecError(f"upload of {shown} could not be put in place: {why}", op="upload")

    async def download(self, instance_id: str, target: str, local: Path, shown: str) -> bool:
        """Whether the container has ``target``: then its file or tree is now at ``local``."""
        chunks = await self._call(get_archive, self._connect(), container_name(instance_id), target)
        if chunks is None:
            return False
        await anyio.to_thread.run_sync(_tar.unpack_to, chunks, local, shown)
        return True

    async def unpack(self, instance_id: str, archive: Path, target: str, shown: str) -> None:
        """Extract the local tar ``archive`` into the container's directory ``target``."""
        await self._call(put_file, self._connect(), container_name(instance_id), archive, target, shown)
