"""Background processes: started, read, waited for and killed by id from any process; and bound
env, variables every later command in an instance sees. Brought by the provider's *processes*
part (``Capability.PROCESSES``): bound env rides on the same in-instance helper.

A provider with a byte stream into its instances holds the channel's (``compute.channel``); one
whose exec is one-shot holds ``compute.oneshot.OneShotProcesses``. The public methods
(``OptionalAbilities``) check the ids, count the call as the instance's activity and delegate;
``wait_process`` polls ``get_process`` on every provider. Without the part each refuses with one
sentence.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, Protocol

from praisonai._types import ProcessInfo


class ProcessTable(Protocol):
    """A provider's part that starts, lists, reads and kills an instance's background processes,
    spooled inside the instance (so any process can reach them by id), and binds env there.
    Process ids and env reach it checked."""

    async def start(
        self, instance_id: str, command: str, cwd: str | None, env: Mapping[str, str]
    ) -> ProcessInfo:
        """Start ``command`` in the background from ``cwd`` (the instance's working dir when
        ``None``) with ``env`` added, and return at once."""
        ...

    async def started(self, instance_id: str, only: str | None = None) -> list[ProcessInfo]:
        """Every background process started in the instance, by any client; with ``only``, the
        one of that id (an empty list when there is none)."""
        ...

    async def output(
        self, instance_id: str, process_id: str, stream: Literal["out", "err"], offset: int, limit: int | None
    ) -> bytes:
        """The process's spooled ``out`` (stdout) or ``err`` (stderr) from byte ``offset``, at
        most ``limit`` bytes (to its end when ``None``)."""
        ...

    async def kill(self, instance_id: str, process_id: str) -> None:
        """Kill the process and everything it started; idempotent."""
        ...

    async def bind_env(self, instance_id: str, env: Mapping[str, str]) -> None:
        """Add ``env`` to the environment of every later command in the instance, a later
        binding overriding an earlier one name by name; ``UnsupportedFeatureError`` where the
        part keeps no env (a one-shot helper)."""
        ...
