"""Modal captures: ``sb.snapshot_filesystem()`` makes an Image (the sandbox's env is not in its
filesystem, so no env value is saved); a later provision starts from ``Image.from_id``. Modal
names no images, so which image is capture ``<tag>`` is kept under
``$PRAISONAI_HOME/captures/modal/<app>/<tag>`` (the image id; the file's mtime is its last use):
any process of this home finds it. Modal expires a snapshot after its ttl (30 days by default): an
image Modal no longer knows fails that one provision with a sentence saying so and is forgotten,
so the next provision runs setup again (the SDK cannot look an image up before using it:
``Image.from_id(...).hydrate()`` raises "cannot be hydrated on demand")."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from praisonai._errors import InstanceNotFoundError, ProvisionError
from praisonai._home import praisonai_home
from praisonai._types import InstanceInfo
from praisonai.compute.abilities.captures import Capturer, SnapshotRef
from praisonai.compute.config import ComputeConfig
from praisonai.compute.providers.modal import _sdk
from praisonai.compute.providers.modal._sdk import translated

SNAPSHOT_TIMEOUT_S = 300

#: The provider's start of a sandbox from a Modal image: ``(instance_id, cfg, labels, image)``.
StartWith = Callable[[str, ComputeConfig, dict[str, str], Any], Awaitable[InstanceInfo]]
#: The provider's use of an instance's sandbox, woken first when paused: ``(instance_id, use)``.
Woken = Callable[[str, Callable[[Any], Awaitable[SnapshotRef]]], Awaitable[SnapshotRef]]


class ModalCapturer(Capturer):
    """A ``ModalCompute``'s captures, built from its app's name, its ``woken`` sandbox of an
    instance and its ``start_with`` a Modal image. The tags live in this home's files, not in a
    list on Modal: ``praisonai env captures`` lists none here."""

    def __init__(self, *, app_name: str, woken: Woken, start_with: StartWith) -> None:
        self._app_name, self._woken, self._start_with = app_name, woken, start_with

    async def find(self, tag: str) -> SnapshotRef | None:
        return await find(self._app_name, tag, "modal")

    async def save(self, instance_id: str, tag: str, cfg: ComputeConfig) -> SnapshotRef:
        return await self._woken(instance_id, lambda sb: save(sb, self._app_name, tag, "modal"))

    async def create_from(
        self, instance_id: str, cfg: ComputeConfig, labels: dict[str, str], snapshot: SnapshotRef
    ) -> InstanceInfo:
        try:
            return await self._start_with(instance_id, cfg, labels, image(snapshot))
        except InstanceNotFoundError as exc:  # NOT_FOUND at create: the image expired on Modal
            forget(self._app_name, snapshot.ref)
            raise ProvisionError(
                f"Modal no longer has capture image {snapshot.ref}; provision again to rebuild it",
                op="provision",
            ) from exc


def place(app_name: str, name: str, kind: str = "captures") -> Path:
    """Where this home keeps the image id of capture ``name`` (``kind``: ``captures``) or of
    snapshot ``name`` (``snapshots``: ``_snapshot``) of the Modal app."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", app_name)
    return praisonai_home() / kind / "modal" / safe / name


async def find(app_name: str, tag: str, provider: str) -> SnapshotRef | None:
    where = place(app_name, tag)
    try:
        image_id = where.read_text().strip()
    except FileNotFoundError:
        return None
    with contextlib.suppress(OSError):
        os.utime(where)  # noted as used
    return SnapshotRef(provider, image_id, where.stat().st_mtime)


async def snapshot_image(sb: Any, op: str) -> str:
    """The id of a new Modal image of the sandbox's filesystem (``snapshot_filesystem``)."""
    with translated(op):
        image = await sb.snapshot_filesystem.aio(timeout=SNAPSHOT_TIMEOUT_S)
    return str(image.object_id)


def keep(where: Path, image_id: str) -> None:
    """Write ``image_id`` to ``where``, whole or not at all."""
    where.parent.mkdir(parents=True, exist_ok=True)
    partial = where.with_name(f".{where.name}.{os.getpid()}")
    partial.write_text(image_id)
    os.replace(partial, where)


async def save(sb: Any, app_name: str, tag: str, provider: str) -> SnapshotRef:
    image_id = await snapshot_image(sb, "capture")
    where = place(app_name, tag)
    keep(where, image_id)
    return SnapshotRef(provider, image_id, where.stat().st_mtime)


def image(ref: SnapshotRef) -> Any:
    return _sdk.load().Image.from_id(ref.ref)


def forget(app_name: str, image_id: str) -> None:
    """Drop every tag naming ``image_id`` (Modal no longer has it)."""
    folder = place(app_name, "x").parent
    for where in folder.glob("*") if folder.is_dir() else ():
        with contextlib.suppress(OSError):
            if where.read_text().strip() == image_id:
                where.unlink()
