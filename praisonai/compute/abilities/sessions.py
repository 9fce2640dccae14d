"""Shell sessions: a persistent shell per instance. Brought by the provider's *sessions* part
(``Capability.SESSIONS``), which the channel (``compute.channel``) gives every provider with a
byte stream into its instances; without it ``open_session`` refuses with one sentence.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from praisonai.runtime.session import ShellSession


class ShellSessions(Protocol):
    """A provider's part that opens persistent shells in its instances."""

    async def open(self, instance_id: str, cwd: str | None) -> ShellSession:
        """A persistent shell in the instance, started in ``cwd`` (its working dir when ``None``),
        whose traffic counts as the instance's activity."""
        ...
