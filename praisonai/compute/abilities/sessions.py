"""Shell sessions: a persistent shell per instance. Turned on by ``Capability.SESSIONS``.

The channel mixin (``praisonai.compute.channel``) brings them to every provider with a byte
stream; without the capability ``open_session`` refuses with one sentence.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from praisonai._types import Capability
from praisonai.compute.abilities._refusal import Refusal

if TYPE_CHECKING:
    from praisonai.runtime.session import ShellSession


class Sessions(Refusal):
    """The shell-session method of the provider contract."""

    async def open_session(self, instance_id: str, *, cwd: str | None = None) -> ShellSession:
        """A persistent shell in the instance (cwd, variables and functions persist)."""
        raise self._unsupported("shell sessions", "session", Capability.SESSIONS)
