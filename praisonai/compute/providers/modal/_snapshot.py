"""Modal snapshots: ``sb.snapshot_filesystem()`` of the running sandbox makes a Modal image (as a
capture's, ``_capture.snapshot_image``); new sandboxes start from ``Image.from_id`` of it. Modal
names no images, so which image is snapshot ``<id>`` is kept in this home, under
``$PRAISONAI_HOME/snapshots/modal/<app>/<id>`` (the image id alone), where any process of the home
finds it; ``remove`` deletes the image on Modal (``modal.experimental.image_delete``, the SDK's
one call that does) and then that file.

No env value: a sandbox's env is not in its filesystem (Modal keeps it out of a snapshot), but the
env bound after start is, in the helper's spool (``env``). That file is emptied through the helper
for the snapshot and written back after it, with whatever a ``bind_env`` added meanwhile (a new
file renamed over it). Modal has no freeze: a helper or shell session that starts during the
snapshot (seconds) reads the emptied file and lacks the bound env; commands of helpers already
running keep theirs, which they loaded when it was bound. The rest of the spool is in the snapshot
as any file is (the outputs of the commands the source ran; a fork lists its processes as lost).

A sandbox's files are its image's and its own, fixed when it was made: Modal cannot roll one back,
so ``restore`` refuses and ``fork(1)`` is the way. Modal keeps a snapshot image until its ttl
(30 days by default) or its removal; one Modal expired fails the start from it in one sentence.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import anyio.to_thread

from praisonai._errors import InstanceNotFoundError, ProvisionError
from praisonai._types import InstanceInfo
from praisonai.compute.abilities.snapshots import no_restore_in_place
from praisonai.compute.channel import bound_env_left_out
from praisonai.compute.config import ComputeConfig
from praisonai.compute.providers.modal import _sdk
from praisonai.compute.providers.modal._capture import StartWith, keep, place, snapshot_image
from praisonai.compute.providers.modal._sdk import translated
from praisonai.runtime.pool import ChannelPool


class Woken(Protocol):
    """The provider's use of an instance's sandbox, woken first when paused (``ModalPauser.woken``)."""

    def __call__(self, instance_id: str, use: Callable[[Any], Awaitable[str]]) -> Awaitable[str]: ...


@dataclass(frozen=True)
class ModalSnapshotter:
    """``ModalCompute``'s snapshotter (``abilities.snapshots.Snapshotter``), from its app's name,
    its ``woken`` sandbox of an instance, its ``start_with`` a Modal image (as a capture's), its
    helper ``channels`` and the ``spool`` each instance's helper keeps its bound env in."""

    app_name: str
    woken: Woken
    start_with: StartWith
    channels: ChannelPool
    spool: Callable[[str], str]

    async def take(self, instance_id: str, snapshot_id: str) -> int | None:
        async with bound_env_left_out(self.channels, instance_id, f"{self.spool(instance_id)}/env"):
            image_id = await self.woken(instance_id, lambda sb: snapshot_image(sb, "snapshot"))
        await anyio.to_thread.run_sync(keep, self._place(snapshot_id), image_id)
        return None  # Modal does not say what an image holds

    async def create_from(
        self, instance_id: str, cfg: ComputeConfig, labels: dict[str, str], snapshot_id: str
    ) -> InstanceInfo:
        image_id = await anyio.to_thread.run_sync(self._image_id, snapshot_id)
        try:
            return await self.start_with(instance_id, cfg, labels, _sdk.load().Image.from_id(image_id))
        except InstanceNotFoundError as exc:  # NOT_FOUND at create: Modal expired the image
            raise ProvisionError(
                f"Modal no longer has snapshot {snapshot_id} (image {image_id}); remove it "
                "(praisonai.compute.remove_snapshot)",
                op="provision",
            ) from exc

    async def restore(self, instance_id: str, snapshot_id: str) -> InstanceInfo:
        raise no_restore_in_place(
            "modal", instance_id, snapshot_id, "a sandbox's files are fixed when it is made"
        )

    async def remove(self, snapshot_id: str) -> bool:
        where = self._place(snapshot_id)
        try:
            image_id = where.read_text().strip()
        except FileNotFoundError:
            return False
        _sdk.load()  # imported safely first (its config checked)
        from modal.experimental import image_delete

        try:
            with translated("remove_snapshot", image_id):
                await image_delete.aio(image_id)
        except InstanceNotFoundError:  # Modal expired it already: nothing there
            where.unlink(missing_ok=True)
            return False
        where.unlink(missing_ok=True)
        return True

    async def held(self) -> list[str]:
        folder = self._place("x").parent
        if not folder.is_dir():
            return []
        return sorted(entry.name for entry in folder.iterdir() if not entry.name.startswith("."))

    def _place(self, snapshot_id: str) -> Path:
        return place(self.app_name, snapshot_id, "snapshots")

    def _image_id(self, snapshot_id: str) -> str:
        try:
            return self._place(snapshot_id).read_text().strip()
        except FileNotFoundError:
            raise ProvisionError(
                f"snapshot {snapshot_id} is recorded but this home no longer knows its Modal image; "
                "remove it (praisonai.compute.remove_snapshot)",
                op="provision",
            ) from None
