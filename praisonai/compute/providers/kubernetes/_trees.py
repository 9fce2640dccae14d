"""Trees in and out of a pod: a tar through the instance's helper, packed or unpacked by ``tar``
inside it (pods/exec has no archive API, unlike docker's)."""

from __future__ import annotations

import posixpath
import shlex
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from praisonai._errors import PathNotFoundError
from praisonai.compute import _tar

if TYPE_CHECKING:
    from praisonai.compute.providers.kubernetes import KubernetesCompute


async def upload(k: KubernetesCompute, instance_id: str, local: Path, remote: str) -> None:
    """``local`` into the pod at ``remote``: a tar written through the helper, unpacked by ``tar``."""
    target = await k._channel_path(instance_id, remote)
    tar = await anyio.to_thread.run_sync(_tar.pack_path, local, posixpath.basename(target) or "root")
    archive = f"{k._spool(instance_id)}/xfer-{uuid.uuid4().hex}.tar"
    await k._channels.run(instance_id, lambda ch: ch.write_file(archive, tar))
    q, parent = shlex.quote, shlex.quote(posixpath.dirname(target))
    await k._shell(
        instance_id,
        f"mkdir -p -- {parent} && tar -xf {q(archive)} -C {parent}; rc=$?; rm -f -- {q(archive)}; exit $rc",
        "upload",
    )


async def download(k: KubernetesCompute, instance_id: str, remote: str, local: Path) -> None:
    """The pod's ``remote`` to ``local``: packed by ``tar`` in the pod, read through the helper.

    Raises:
        PathNotFoundError: there is no ``remote``.
    """
    target = await k._channel_path(instance_id, remote)
    archive = f"{k._spool(instance_id)}/xfer-{uuid.uuid4().hex}.tar"
    q = shlex.quote
    said = await k._shell(
        instance_id,
        f"[ -e {q(target)} ] || {{ echo N; exit 0; }}; "
        f"tar -cf {q(archive)} -C {q(posixpath.dirname(target))} "
        f"{q(posixpath.basename(target))} && echo T",
        "download",
    )
    if said.strip() == "N":
        raise PathNotFoundError(f"no such file or directory in the instance: {remote}", op="download")
    try:
        tar = await k._channels.run(instance_id, lambda ch: ch.read_file(archive, 0, None))
    finally:
        await k._shell(instance_id, f"rm -f -- {q(archive)}", "download")
    await anyio.to_thread.run_sync(_tar.unpack_to, [tar], local, remote)
