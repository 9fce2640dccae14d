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
  record. Its image stays until Modal expires it: SDK 1.6.4 has no call that deletes an image.

Both are idempotent. A crash between the two steps of either leaves a running sandbox beside a
record: the running sandbox is what ``status`` and ``list`` report, so nothing is lost.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

import anyio

from praisonai._errors import InstanceNotFoundError, UnsupportedFeatureError
from praisonai._types import InstanceInfo, InstanceStatus
from praisonai.compute import _home_reaper
from praisonai.compute.providers.modal import _sdk, _spec
from praisonai.compute.providers.modal._paused import Paused
from praisonai.compute.providers.modal._sdk import translated

if TYPE_CHECKING:
    from praisonai.compute.providers.modal import ModalCompute

T = TypeVar("T")
SNAPSHOT_TIMEOUT_S = 300
SNAPSHOT_TTL_S = 30 * 24 * 3600  # Modal's default: how long a paused instance's files are kept


async def pause(p: ModalCompute, instance_id: str) -> InstanceInfo:
    """Snapshot, record, terminate (see the module docstring). Idempotent."""
    try:
        sb = await p._find(instance_id, fresh=True)
    except InstanceNotFoundError:
        if (record := await p._paused.get(instance_id)) is None:
            raise
        return paused_info(p, record)
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
    env = p._envs.get(instance_id, {})
    record = Paused(instance_id, p.options.app_name, image.object_id, tags, env, time.time())
    await p._paused.put(record)  # before the terminate: the files are never only in the sandbox
    with translated("pause", instance_id), contextlib.suppress(_sdk.load().exception.NotFoundError):
        await sb.terminate.aio(wait=True)
    await p._forget(instance_id)
    return paused_info(p, record)


async def resume(p: ModalCompute, instance_id: str) -> InstanceInfo:
    """A new sandbox from the paused instance's image, under its id; a running instance is
    returned as it is.

    Raises:
        InstanceNotFoundError: no such instance, or it was past its ttl or its image expired on
            Modal (and it is removed now).
    """
    try:
        return await p._running_status(instance_id)
    except InstanceNotFoundError:
        if (record := await p._paused.get(instance_id)) is None:
            raise
    if why := _spec.past_ttl(record.tags, time.time()):
        await p.shutdown(instance_id)
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
        info = await p._start(instance_id, kwargs)
    except InstanceNotFoundError as exc:  # NOT_FOUND at create: Modal expired the image
        await p.shutdown(instance_id)
        raise InstanceNotFoundError(
            f"Modal no longer has the snapshot of paused instance {instance_id}: removed, not resumed",
            op="resume",
        ) from exc
    await p._paused.pop(instance_id)
    await anyio.to_thread.run_sync(_home_reaper.ensure_running)  # it let the paused instance be
    return info


def paused_info(p: ModalCompute, record: Paused) -> InstanceInfo:
    return p._info(record.instance_id, "", record.tags, InstanceStatus.PAUSED, {"image_id": record.image_id})


class PauseMixin:
    """``ModalCompute``'s pause hooks (``abilities.pause``) and the hooks a paused instance
    changes: its status and listing come from its record, its shutdown removes the record."""

    def _modal(self) -> ModalCompute:
        return cast("ModalCompute", self)

    async def _pause(self, instance_id: str) -> InstanceInfo:
        return await pause(self._modal(), instance_id)

    async def _resume(self, instance_id: str) -> InstanceInfo:
        return await resume(self._modal(), instance_id)

    async def _awake(self, instance_id: str) -> Any:
        """The instance's sandbox (as ``_find``); a paused instance is resumed first, its
        ledger row kept (the public ``resume``)."""
        p = self._modal()

        async def paused() -> bool:
            return await p._paused.get(instance_id) is not None

        return await p._waking(instance_id, lambda: p._find(instance_id), paused)

    async def _woken(self, instance_id: str, use: Callable[[Any], Awaitable[T]]) -> T:
        """``use(sandbox)`` on the instance's sandbox (``_awake``). When it fails because the
        sandbox ended (a handle this process held, and another process paused the instance),
        once more on the instance as it is now: only for what runs nothing when it fails so
        (opening a channel, a transfer, a capture), never a command."""
        p = self._modal()
        held = instance_id in p._sandboxes  # a handle found just now is not stale
        try:
            return await use(await self._awake(instance_id))
        except InstanceNotFoundError:
            if not held:  # that error stands
                raise
        await p._forget(instance_id)
        return await use(await self._awake(instance_id))

    async def _status(self, instance_id: str) -> InstanceInfo:
        p = self._modal()
        try:
            return await p._running_status(instance_id)
        except InstanceNotFoundError:
            if (record := await p._paused.get(instance_id)) is None:
                raise
        return paused_info(p, record)

    async def _list(self) -> list[InstanceInfo]:
        p = self._modal()
        running = await p._running_list()
        seen = {info.instance_id for info in running}  # a running sandbox wins over a record
        return running + [paused_info(p, r) for r in await p._paused.every() if r.instance_id not in seen]

    async def _destroy(self, instance_id: str) -> bool:
        """The record, then any running sandbox (a crash between a pause's or resume's steps can
        leave both)."""
        p = self._modal()
        had_record = await p._paused.pop(instance_id) is not None
        return await p._destroy_running(instance_id) or had_record
