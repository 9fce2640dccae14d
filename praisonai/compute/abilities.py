"""The contract's optional abilities: captures, background processes, shell sessions and bound env.

Each refuses with one sentence by default (captures list nothing). A provider declares the
abilities it has in ``capabilities`` and overrides these methods; the channel mixin
(``compute.channel``) brings processes, sessions and bound env to any provider with a byte stream.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar, Literal

import anyio

from praisonai._errors import UnsupportedFeatureError
from praisonai._limits import check_timeout
from praisonai._types import Capability, CaptureInfo, ProcessInfo

if TYPE_CHECKING:
    from praisonai.runtime.session import ShellSession


class OptionalAbilities:
    """Methods of :class:`~praisonai.compute.base.ComputeProvider` that a provider may lack."""

    name: ClassVar[str]

    # ---- captures (providers with the ``capture`` capability) ------------------------------

    async def list_captures(self) -> list[CaptureInfo]:
        """Saved post-setup states, most recently used first (none without ``capture``)."""
        return []

    async def prune_captures(
        self, *, older_than_s: float | None = None, keep: int | None = None, dry_run: bool = False
    ) -> list[CaptureInfo]:
        """Remove captures unused for ``older_than_s`` seconds and all but the ``keep`` most
        recently used (those an instance still runs from stay); return what was (or would be)
        removed."""
        return []

    # ---- background processes, sessions, bound env (channel-backed providers) ----------------

    async def start_process(
        self, instance_id: str, command: str, *, cwd: str | None = None, env: Mapping[str, str] | None = None
    ) -> ProcessInfo:
        """Start ``command`` in the background and return at once. Its output is spooled inside
        the instance, so any process can read it, wait for it or kill it later by its id."""
        raise self._unsupported("background processes", "process", Capability.PROCESSES)

    async def list_processes(self, instance_id: str) -> list[ProcessInfo]:
        """Every background process started in the instance, by any client."""
        raise self._unsupported("background processes", "process", Capability.PROCESSES)

    async def get_process(self, instance_id: str, process_id: str) -> ProcessInfo:
        """The background process's state (output, wait and kill look it up here first)."""
        raise self._unsupported("background processes", "process", Capability.PROCESSES)

    async def read_process_output(
        self,
        instance_id: str,
        process_id: str,
        *,
        stream: Literal["stdout", "stderr"] = "stdout",
        offset: int = 0,
        limit: int | None = None,
    ) -> bytes:
        """The process's output from byte ``offset`` (at most ``limit`` bytes), while it runs or after."""
        raise self._unsupported("background processes", "process", Capability.PROCESSES)

    async def wait_process(
        self, instance_id: str, process_id: str, timeout: float | None = None
    ) -> ProcessInfo:
        """Wait until the process ends (or ``timeout`` passes) and return its state (polled
        through ``get_process``, backing off to twice a second)."""
        delay = 0.01
        with anyio.move_on_after(check_timeout(timeout)):
            while (info := await self.get_process(instance_id, process_id)).running:
                await anyio.sleep(delay)
                delay = min(delay * 2, 0.5)
            return info
        return await self.get_process(instance_id, process_id)

    async def kill_process(self, instance_id: str, process_id: str) -> None:
        """Kill the process and everything it started; idempotent."""
        raise self._unsupported("background processes", "process", Capability.PROCESSES)

    async def open_session(self, instance_id: str, *, cwd: str | None = None) -> ShellSession:
        """A persistent shell in the instance (cwd, variables and functions persist)."""
        raise self._unsupported("shell sessions", "session", Capability.SESSIONS)

    async def bind_env(self, instance_id: str, env: Mapping[str, str]) -> None:
        """Add ``env`` to the environment of every later command in the instance (exec,
        background processes and sessions, from any process); a later binding overrides an
        earlier one name by name."""
        raise self._unsupported("binding env to an instance", "bind_env", Capability.PROCESSES)

    def _unsupported(self, what: str, op: str, needs: Capability) -> UnsupportedFeatureError:
        return UnsupportedFeatureError(
            f"the {self.name} provider does not support {what} (it lacks the {needs.value!r} capability); "
            "choose one that has it: `praisonai compute providers` lists each provider's",
            op=op,
        )
