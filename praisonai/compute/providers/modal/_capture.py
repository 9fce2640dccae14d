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
from pathlib import Path
from typing import Any

from praisonai._home import praisonai_home
from praisonai.compute.base import SnapshotRef
from praisonai.compute.providers.modal import _sdk
from praisonai.compute.providers.modal._sdk import translated

SNAPSHOT_TIMEOUT_S = 300


def _place(app_name: str, tag: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", app_name)
    return praisonai_home() / "captures" / "modal" / safe / tag


async def find(app_name: str, tag: str, provider: str) -> SnapshotRef | None:
    place = _place(app_name, tag)
    try:
        image_id = place.read_text().strip()
    except FileNotFoundError:
        return None
    with contextlib.suppress(OSError):
        os.utime(place)  # noted as used
    return SnapshotRef(provider, image_id, place.stat().st_mtime)


async def save(sb: Any, app_name: str, tag: str, provider: str) -> SnapshotRef:
    with translated("capture"):
        image = await sb.snapshot_filesystem.aio(timeout=SNAPSHOT_TIMEOUT_S)
    place = _place(app_name, tag)
    place.parent.mkdir(parents=True, exist_ok=True)
    partial = place.with_name(f".{tag}.{os.getpid()}")
    partial.write_text(image.object_id)
    os.replace(partial, place)  # whole or not at all
    return SnapshotRef(provider, image.object_id, place.stat().st_mtime)


def image(ref: SnapshotRef) -> Any:
    return _sdk.load().Image.from_id(ref.ref)


def forget(app_name: str, image_id: str) -> None:
    """Drop every tag naming ``image_id`` (Modal no longer has it)."""
    folder = _place(app_name, "x").parent
    for place in folder.glob("*") if folder.is_dir() else ():
        with contextlib.suppress(OSError):
            if place.read_text().strip() == image_id:
                place.unlink()
