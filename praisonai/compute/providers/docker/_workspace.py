"""Archives into a container, streamed: the engine's archive API reads the tar from a file in
blocks, so neither a workspace upload nor a plain ``upload`` holds a tree in memory."""

from __future__ import annotations

import posixpath
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, TypeVar, cast

import anyio.to_thread

from praisonai._errors import ExecError, PathNotFoundError
from praisonai._transfer import CountedReader
from praisonai.compute import _tar

if TYPE_CHECKING:
    from praisonai.compute.base import ComputeProvider
from praisonai.compute.providers.docker._client import container_name, file_error, get_archive
from praisonai.runtime.partial import partial_name

T = TypeVar("T")


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


class ArchiveTransfers:
    """DockerEngine's uploads and downloads through the engine's archive API, streamed."""

    api: Any
    if TYPE_CHECKING:

        async def _call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T: ...
        async def _channel_path(self, instance_id: str, path: str) -> str: ...
        async def _command_user(self, instance_id: str) -> str | None: ...
        async def _inspect(self, instance_id: str) -> dict[str, Any]: ...
        async def _hand_over(self, instance_id: str, where: str, op: str) -> None: ...

    async def _upload(self, instance_id: str, local: Path, remote: str) -> None:
        """A tree is unpacked over what is there; one file goes in beside its target under a new
        name, then is renamed over it: whole or not at all, and seen under gVisor too (whose
        sandbox keeps its view of a file it has opened, and misses the engine replacing it)."""
        target = await self._channel_path(instance_id, remote)
        user = await self._command_user(instance_id)
        container = container_name(instance_id)
        if local.is_dir():
            await self._call(put_path, self.api, container, local, target, remote, user)
            return
        partial = posixpath.join(posixpath.dirname(target), partial_name())
        await self._call(put_path, self.api, container, local, partial, remote, user)
        provider = cast("ComputeProvider", self)
        placed = await provider.execute(  # root's, as the engine's unpacking is
            instance_id, ["mv", "-f", "--", partial, target], privileged=True
        )
        if placed.exit_code != 0:
            await provider.execute(instance_id, ["rm", "-f", "--", partial], privileged=True)
            why = placed.stderr.strip()[-300:]
            raise ExecError(f"upload of {remote} could not be put in place: {why}", op="upload")

    async def _download(self, instance_id: str, remote: str, local: Path) -> None:
        target = await self._channel_path(instance_id, remote)
        chunks = await self._call(get_archive, self.api, container_name(instance_id), target)
        if chunks is None:
            await self._inspect(instance_id)  # raises InstanceNotFoundError when that is the cause
            raise PathNotFoundError(f"no such file or directory in the instance: {remote}", op="read")
        await anyio.to_thread.run_sync(_tar.unpack_to, chunks, local, remote)

    async def _unpack_archive(self, instance_id: str, archive: Path, remote_dir: str) -> bool:
        target = await self._channel_path(instance_id, remote_dir)
        await self._call(put_file, self.api, container_name(instance_id), archive, target, remote_dir)
        await self._hand_over(instance_id, target, "upload")  # the directories the engine made
        return True
