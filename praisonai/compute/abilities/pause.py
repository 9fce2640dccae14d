"""Pause and resume: an instance stopped with its filesystem kept, brought back under the same id.
Turned on by ``Capability.PAUSE``.

A provider with ``pause`` implements ``_pause`` (docker stops the container; E2B pauses natively;
Daytona stops; Modal snapshots the filesystem; kubernetes scales to zero keeping its volume) and
``_resume`` (the reverse, same instance id). The public ``pause``/``resume`` check the id, call
these hooks and keep the ledger's state; without the capability they refuse with one sentence.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from praisonai._errors import InstanceNotFoundError
from praisonai._types import Capability, InstanceInfo
from praisonai.compute import lifecycle
from praisonai.compute.abilities._refusal import Refusal

T = TypeVar("T")


class Pause(Refusal):
    """The pause methods and hooks of the provider contract."""

    async def pause(self, instance_id: str) -> InstanceInfo:
        """Stop the instance keeping its filesystem; :meth:`resume` brings it back under the same
        id. Its processes end (E2B and Tenki keep memory too); its ledger row says ``paused``. Idempotent.

        Raises:
            UnsupportedFeatureError: the provider lacks ``Capability.PAUSE``.
            InstanceNotFoundError: no such instance.
        """
        self._check_id(instance_id)
        info = await self._pause(instance_id)
        await lifecycle.mark(instance_id, "paused")
        return info

    async def resume(self, instance_id: str) -> InstanceInfo:
        """Bring a paused instance back under the same id, its files as they were; a running
        instance is returned as it is. Its ledger row says ``running`` again.

        Raises:
            UnsupportedFeatureError: the provider lacks ``Capability.PAUSE``.
            InstanceNotFoundError: no such instance.
        """
        self._check_id(instance_id)
        info = await self._resume(instance_id)
        await lifecycle.mark(instance_id, "running")
        return info

    async def _pause(self, instance_id: str) -> InstanceInfo:
        """Stop the instance keeping its filesystem (its processes end, unless the vendor keeps
        memory too: E2B, Tenki); its status is then
        ``PAUSED``. Idempotent on a paused instance."""
        raise self._unsupported("pausing instances", "pause", Capability.PAUSE)

    async def _resume(self, instance_id: str) -> InstanceInfo:
        """Bring a paused instance back under the same id, its filesystem as it was paused, and
        return it ``RUNNING``. Idempotent on a running instance."""
        raise self._unsupported("resuming instances", "resume", Capability.PAUSE)

    async def _paused_disk(self, instance_id: str) -> int | None:
        """The bytes a paused instance holds on its provider (docker: its writable layer), or
        ``None`` when the provider cannot say. Shown by ``praisonai compute ps``."""
        return None

    async def _waking(
        self, instance_id: str, use: Callable[[], Awaitable[T]], paused: Callable[[], Awaitable[bool]]
    ) -> T:
        """``use()`` on the instance; when it fails with ``InstanceNotFoundError`` and ``paused()``
        says the instance is paused, resume it (the public ``resume``: the ledger says running)
        and ``use()`` once more. Only for what runs nothing when it fails so (finding the
        instance, opening a channel), never a command. Two callers at once both resume: the
        second finds it running."""
        try:
            return await use()
        except InstanceNotFoundError:
            if not await paused():  # gone for good: that error stands
                raise
        await self.resume(instance_id)
        return await use()
