"""Background processes: started, read, waited for and killed by id from any process; and bound
env, variables every later command in an instance sees. Brought by the provider's
*process_table* part (``Capability.PROCESSES``): bound env rides on the same in-instance helper.

A provider with a byte stream into its instances holds the channel's (``compute.channel``); one
whose exec is one-shot holds ``compute.oneshot.OneShotProcesses``. Callers use the provider's
:class:`Processes` (``provider.processes``), which checks the ids, counts the call as the
instance's activity and delegates; ``wait`` polls ``get`` on every provider. Without the part each
call refuses with one sentence.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Mapping
from typing import Literal, Protocol

import anyio

from praisonai._limits import check_timeout
from praisonai._types import Capability, ProcessInfo
from praisonai.compute import _activity
from praisonai.compute.abilities.part import held
from praisonai.compute.requests import checked_env
from praisonai.runtime.processes import checked_id, found_one


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


class Processes:
    """A provider's background processes and bound env, as callers use them
    (``provider.processes.start(...)``): each call checks the ids, counts as the instance's
    activity and asks the provider's :class:`ProcessTable` part, or refuses in one sentence when
    the provider holds none. Built from the part, the provider's name and its id check."""

    def __init__(self, table: ProcessTable | None, provider: str, check_id: Callable[[object], None]) -> None:
        self._table, self._provider, self._check_id = table, provider, check_id

    async def start(
        self, instance_id: str, command: str, *, cwd: str | None = None, env: Mapping[str, str] | None = None
    ) -> ProcessInfo:
        """Start ``command`` in the background and return at once. Its output is spooled inside
        the instance, so any process can read it, wait for it or kill it later by its id."""
        table = self._held(instance_id)
        return await table.start(instance_id, command, cwd, checked_env(env or {}))

    async def list(self, instance_id: str) -> builtins.list[ProcessInfo]:
        """Every background process started in the instance, by any client."""
        return await self._held(instance_id).started(instance_id)

    async def get(self, instance_id: str, process_id: str) -> ProcessInfo:
        """The background process's state (output, wait and kill look it up here first)."""
        found = await self._held(instance_id).started(instance_id, checked_id(process_id))
        return found_one(found, process_id, instance_id)

    async def output(
        self,
        instance_id: str,
        process_id: str,
        *,
        stream: Literal["stdout", "stderr"] = "stdout",
        offset: int = 0,
        limit: int | None = None,
    ) -> bytes:
        """The process's output from byte ``offset`` (at most ``limit`` bytes), while it runs or after."""
        await self.get(instance_id, process_id)
        spooled: Literal["out", "err"] = "out" if stream == "stdout" else "err"
        return await self._held(instance_id).output(instance_id, process_id, spooled, offset, limit)

    async def wait(self, instance_id: str, process_id: str, timeout: float | None = None) -> ProcessInfo:
        """Wait until the process ends (or ``timeout`` passes) and return its state (polled
        through :meth:`get`, backing off to twice a second)."""
        delay = 0.01
        with anyio.move_on_after(check_timeout(timeout)):
            while (info := await self.get(instance_id, process_id)).running:
                await anyio.sleep(delay)
                delay = min(delay * 2, 0.5)
            return info
        return await self.get(instance_id, process_id)

    async def kill(self, instance_id: str, process_id: str) -> None:
        """Kill the process and everything it started; idempotent."""
        await self.get(instance_id, process_id)
        await self._held(instance_id).kill(instance_id, process_id)

    async def bind_env(self, instance_id: str, env: Mapping[str, str]) -> None:
        """Add ``env`` to the environment of every later command in the instance (exec,
        background processes and sessions, from any process); a later binding overrides an
        earlier one name by name. For env that must not exist before the instance is handed out
        (the secrets of a warm pool's claimer)."""
        table = self._held(instance_id, "binding env to an instance", "bind_env", touch=False)
        await table.bind_env(instance_id, checked_env(env))

    def _held(
        self, instance_id: str, what: str = "background processes", op: str = "process", *, touch: bool = True
    ) -> ProcessTable:
        """The part, once the id is checked (and the call counted as activity), or the refusal."""
        self._check_id(instance_id)
        table = held(self._table, self._provider, what, op, Capability.PROCESSES)
        if touch:
            _activity.touch(instance_id)
        return table
