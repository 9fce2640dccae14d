"""Pause and resume: an instance stopped with its filesystem kept, brought back under the same id.
Brought by the provider's *pauser* part (``Capability.PAUSE``).

A provider that pauses holds a :class:`Pauser` (docker freezes the container, or stops one made to
be kept; E2B pauses natively; Daytona stops; Modal snapshots the filesystem; kubernetes scales to
zero keeping its volume). The public ``pause``/``resume`` (``OptionalAbilities``) check the id,
call the part and keep the ledger's state; a provider without one refuses with one sentence.
:func:`waking` is how a paused instance's next call resumes it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

from praisonai._errors import InstanceNotFoundError
from praisonai._types import InstanceInfo

T = TypeVar("T")


class Pauser(Protocol):
    """A provider's part that pauses and resumes its instances."""

    async def pause(self, instance_id: str) -> InstanceInfo:
        """Stop the instance keeping its filesystem (its processes end, unless the provider keeps
        memory too: E2B, Tenki, a frozen docker container); its status is then ``PAUSED``.
        Idempotent on a paused instance."""
        ...

    async def resume(self, instance_id: str) -> InstanceInfo:
        """Bring a paused instance back under the same id, its filesystem as it was paused, and
        return it ``RUNNING``. Idempotent on a running instance."""
        ...

    async def paused_disk(self, instance_id: str) -> int | None:
        """The bytes a paused instance holds on its provider (docker: its writable layer), or
        ``None`` when the provider cannot say. Shown by ``praisonai compute ps``."""
        ...


async def waking(
    use: Callable[[], Awaitable[T]],
    paused: Callable[[], Awaitable[bool]],
    resume: Callable[[], Awaitable[object]],
) -> T:
    """``use()`` on an instance; when it fails with ``InstanceNotFoundError`` and ``paused()``
    says the instance is paused, ``resume()`` it (the provider's public ``resume``: the ledger
    says running) and ``use()`` once more. Only for what runs nothing when it fails so (finding
    the instance, opening a channel), never a command. Two callers at once both resume: the
    second finds it running."""
    try:
        return await use()
    except InstanceNotFoundError:
        if not await paused():  # gone for good: that error stands
            raise
    await resume()
    return await use()
