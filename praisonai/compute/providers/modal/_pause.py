"""Pause and resume on Modal through ``snapshot_filesystem`` (Modal's own pause is experimental,
for ``_experimental_persistent`` sandboxes only).

- pause: the sandbox's filesystem becomes an Image (``snapshot_filesystem``, kept by Modal for
  ``SNAPSHOT_TTL_S``), the instance's record goes to the ``praisonai-paused`` Modal Dict
  (``_paused``: image id, tags, env), then the sandbox is terminated, waited for so that its
  name (the instance id) is free again. Its processes and memory end; its files stay.
- resume: a sandbox is created from that image under the same name, with the same tags,
  settings (``_spec``) and env, so every process finds it by its tags as before; then the
  record goes. One past its ttl is removed instead, and so is one whose image Modal expired.
- a paused instance's next call (a channel, a file transfer, a port, a capture) resumes it
  (``awake``); ``status``/``list`` show it ``PAUSED`` from the record; ``shutdown`` removes the
  record. Its image stays until Modal expires it (only the SDK's experimental ``image_delete``
  deletes one; snapshots use it, pause does not).

Both are idempotent. A crash between the two steps of either leaves a running sandbox beside a
record: the running sandbox is what ``status`` and ``list`` report, so nothing is lost. An
instance that pauses when idle gets no Modal ``idle_timeout`` (Modal would terminate it, files and
all): its reaper pauses it.

A paused instance has no sandbox, so on Modal the pauser is also where the provider's ``status``,
``list`` and ``shutdown`` of an instance go: it knows the records.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from praisonai._errors import InstanceNotFoundError, UnsupportedFeatureError
from praisonai._types import InstanceInfo, InstanceStatus
from praisonai.compute.abilities.pause import waking
from praisonai.compute.lifecycle import LABEL_INSTANCE, LABEL_PROVIDER
from praisonai.compute.providers.modal import _sdk, _spec
from praisonai.compute.providers.modal._paused import Paused, PausedStore
from praisonai.compute.providers.modal._sdk import translated

T = TypeVar("T")
SNAPSHOT_TIMEOUT_S = 300
SNAPSHOT_TTL_S = 30 * 24 * 3600  # Modal's default: how long a paused instance's files are kept


@dataclass(frozen=True)
class Sandboxes:
    """The provider's ways to its running sandboxes: ``find`` (the running sandbox of an instance,
    asked of Modal when ``fresh``), ``start`` (``Sandbox.create`` under the instance's name),
    ``forget`` (drop this process's handle), ``info`` (an instance's info from its tags), ``app``
    (the Modal app), and what this process holds: the ``held`` handles and each one's ``envs``."""

    name: str
    find: Callable[..., Awaitable[Any]]
    start: Callable[[str, dict[str, Any]], Awaitable[InstanceInfo]]
    forget: Callable[[str], Awaitable[None]]
    info: Callable[..., InstanceInfo]
    app: Callable[[], Awaitable[Any]]
    held: Mapping[str, Any]
    envs: Mapping[str, dict[str, str]]


@dataclass(frozen=True)
class ModalPauser:
    """``ModalCompute``'s pauser (``abilities.pause.Pauser``), from its ``sandboxes``, the paused
    instances' records (``store``) and the provider's public ``shutdown`` and ``resume``."""

    sandboxes: Sandboxes
    store: PausedStore
    shutdown: Callable[[str], Awaitable[object]]
    wake: Callable[[str], Awaitable[object]]

    async def pause(self, instance_id: str) -> InstanceInfo:
        """Snapshot, record, terminate (see the module docstring). Idempotent."""
        boxes = self.sandboxes
        try:
            sb = await boxes.find(instance_id, fresh=True)
        except InstanceNotFoundError:
            if (record := await self.store.get(instance_id)) is None:
                raise
            return self._paused_info(record)
        with translated("pause", instance_id):
            tags = await sb.get_tags.aio()
        if _spec.made_before(tags):
            raise UnsupportedFeatureError(
                f"modal instance {instance_id} was made by an older praisonai that did not record its "
                "settings, so it cannot be paused; provision it again",
                op="pause",
            )
        with translated("pause", instance_id):
            image = await sb.snapshot_filesystem.aio(timeout=SNAPSHOT_TIMEOUT_S, ttl=SNAPSHOT_TTL_S)
        env = boxes.envs.get(instance_id, {})
        record = Paused(instance_id, self.store.app, image.object_id, tags, env, time.time())
        await self.store.put(record)  # before the terminate: the files are never only in the sandbox
        with translated("pause", instance_id), contextlib.suppress(_sdk.load().exception.NotFoundError):
            await sb.terminate.aio(wait=True)
        await boxes.forget(instance_id)
        return self._paused_info(record)

    async def resume(self, instance_id: str) -> InstanceInfo:
        """A new sandbox from the paused instance's image, under its id; a running instance is
        returned as it is.

        Raises:
            InstanceNotFoundError: no such instance, or it was past its ttl or its image expired on
                Modal (and it is removed now).
        """
        try:
            return await self._running_status(instance_id)
        except InstanceNotFoundError:
            if (record := await self.store.get(instance_id)) is None:
                raise
        if why := _spec.past_ttl(record.tags, time.time()):
            await self.shutdown(instance_id)
            raise InstanceNotFoundError(
                f"modal instance {instance_id} was {why}: removed, not resumed", op="resume"
            )
        kwargs = _spec.from_tags(record.tags)
        kwargs.update(
            image=_sdk.load().Image.from_id(record.image_id),
            env=record.env,
            workdir=record.tags.get(_spec.TAG_WORKDIR, "/workspace"),
        )
        try:
            info = await self.sandboxes.start(instance_id, kwargs)
        except InstanceNotFoundError as exc:  # NOT_FOUND at create: Modal expired the image
            await self.shutdown(instance_id)
            raise InstanceNotFoundError(
                f"Modal no longer has the snapshot of paused instance {instance_id}: removed, not resumed",
                op="resume",
            ) from exc
        await self.store.pop(instance_id)
        return info

    async def paused_disk(self, instance_id: str) -> int | None:
        """``None``: Modal does not say what a snapshot image holds."""
        return None

    # ---- the provider's hooks that a paused instance changes ---------------------------------

    async def awake(self, instance_id: str) -> Any:
        """The instance's sandbox (as ``find``); a paused instance is resumed first, its ledger
        row kept (the public ``resume``)."""

        async def paused() -> bool:
            return await self.store.get(instance_id) is not None

        find = self.sandboxes.find
        return await waking(lambda: find(instance_id), paused, lambda: self.wake(instance_id))

    async def woken(self, instance_id: str, use: Callable[[Any], Awaitable[T]]) -> T:
        """``use(sandbox)`` on the instance's sandbox (``awake``). When it fails because the
        sandbox ended (a handle this process held, and another process paused the instance),
        once more on the instance as it is now: only for what runs nothing when it fails so
        (opening a channel, a transfer, a capture), never a command."""
        held = instance_id in self.sandboxes.held  # a handle found just now is not stale
        try:
            return await use(await self.awake(instance_id))
        except InstanceNotFoundError:
            if not held:  # that error stands
                raise
        await self.sandboxes.forget(instance_id)
        return await use(await self.awake(instance_id))

    async def status(self, instance_id: str) -> InstanceInfo:
        """The running sandbox's, else the paused instance's record's."""
        try:
            return await self._running_status(instance_id)
        except InstanceNotFoundError:
            if (record := await self.store.get(instance_id)) is None:
                raise
        return self._paused_info(record)

    async def listing(self) -> list[InstanceInfo]:
        """The running sandboxes, and the records of paused instances that have none."""
        modal, boxes = _sdk.load(), self.sandboxes
        app = await boxes.app()
        running = []
        with translated("list"):
            async for sb in modal.Sandbox.list.aio(app_id=app.app_id, tags={LABEL_PROVIDER: boxes.name}):
                tags = await sb.get_tags.aio()
                if LABEL_INSTANCE in tags:
                    running.append(boxes.info(tags[LABEL_INSTANCE], sb.object_id, tags))
        seen = {info.instance_id for info in running}  # a running sandbox wins over a record
        return running + [self._paused_info(r) for r in await self.store.every() if r.instance_id not in seen]

    async def destroy(self, instance_id: str) -> bool:
        """The record, then any running sandbox (a crash between a pause's or resume's steps can
        leave both)."""
        had_record = await self.store.pop(instance_id) is not None
        try:
            sb = await self.sandboxes.find(instance_id, fresh=True)
        except InstanceNotFoundError:
            return had_record  # a vanished sandbox counts as shut down
        with translated("shutdown", instance_id), contextlib.suppress(_sdk.load().exception.NotFoundError):
            await sb.terminate.aio()
        await self.sandboxes.forget(instance_id)
        return True

    async def _running_status(self, instance_id: str) -> InstanceInfo:
        sb = await self.sandboxes.find(instance_id, fresh=True)
        with translated("status", instance_id):
            tags = await sb.get_tags.aio()
        return self.sandboxes.info(instance_id, sb.object_id, tags)

    def _paused_info(self, record: Paused) -> InstanceInfo:
        metadata = {"image_id": record.image_id}
        return self.sandboxes.info(record.instance_id, "", record.tags, InstanceStatus.PAUSED, metadata)
