"""Trees in and out of a pod: a tar through the instance's helper, packed or unpacked by ``tar``
inside it as the commands' uid (pods/exec has no archive API, unlike docker's)."""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from praisonai._errors import PathNotFoundError
from praisonai.compute import _tar
from praisonai.runtime.pool import ChannelPool


class Trees:
    """Uploads and downloads of trees for one provider: ``path`` maps an instance path to the
    pod's, ``shell`` runs a script as the commands' uid and returns its stdout (raising on a
    failure), ``channels`` is the provider's channel pool."""

    def __init__(
        self,
        path: Callable[[str, str], Awaitable[str]],
        shell: Callable[..., Awaitable[str]],
        channels: ChannelPool,
    ) -> None:
        self._path, self._shell, self._channels = path, shell, channels

    async def upload(self, instance_id: str, local: Path, remote: str) -> None:
        """``local`` into the pod at ``remote``: a tar on the stdin of ``tar``, run as the
        commands' uid (the files are theirs, and it writes only where they may)."""
        target = await self._path(instance_id, remote)
        tar = await anyio.to_thread.run_sync(_tar.pack_path, local, posixpath.basename(target) or "root")
        parent = shlex.quote(posixpath.dirname(target))
        await self._shell(instance_id, f"mkdir -p -- {parent} && tar -xf - -C {parent}", "upload", stdin=tar)

    async def download(self, instance_id: str, remote: str, local: Path) -> None:
        """The pod's ``remote`` to ``local``: packed by ``tar`` in the pod as the commands' uid (it
        reads only what they may) into a file of theirs, read through the helper as they would.

        Raises:
            PathNotFoundError: there is no ``remote``.
        """
        target = await self._path(instance_id, remote)
        q = shlex.quote
        said = await self._shell(
            instance_id,
            f"[ -e {q(target)} ] || {{ echo N; exit 0; }}; a=$(mktemp) && "
            f'tar -cf "$a" -C {q(posixpath.dirname(target))} {q(posixpath.basename(target))} '
            '&& echo "T $a" || { rm -f -- "$a"; exit 1; }',
            "download",
        )
        if said.strip() == "N":
            raise PathNotFoundError(f"no such file or directory in the instance: {remote}", op="download")
        archive = said.strip().split(" ", 1)[1]
        try:
            tar = await self._channels.run(instance_id, lambda ch: ch.read_file(archive, 0, None, user=True))
        finally:
            await self._shell(instance_id, f"rm -f -- {q(archive)}", "download")
        await anyio.to_thread.run_sync(_tar.unpack_to, [tar], local, remote)
