"""Bound env: variables every later command in an instance sees. Turned on by ``Capability.PROCESSES``.

It rides on the same in-instance helper as background processes, hence the same capability; the
channel mixin (``praisonai.compute.channel``) brings it. Without it ``bind_env`` refuses.
"""

from __future__ import annotations

from collections.abc import Mapping

from praisonai._types import Capability
from praisonai.compute.abilities._refusal import Refusal


class BoundEnv(Refusal):
    """The ``bind_env`` method of the provider contract."""

    async def bind_env(self, instance_id: str, env: Mapping[str, str]) -> None:
        """Add ``env`` to the environment of every later command in the instance (exec,
        background processes and sessions, from any process); a later binding overrides an
        earlier one name by name."""
        raise self._unsupported("binding env to an instance", "bind_env", Capability.PROCESSES)
