"""The contract's optional abilities, one small module per group.

| module        | methods                                             | turned on by             |
|---------------|-----------------------------------------------------|--------------------------|
| ``captures``  | the ``Capturer`` part: ``list/prune_captures``      | holding a ``capturer``   |
| ``processes`` | the ``ProcessTable`` part: ``start/list/get/wait/`` | holding ``processes``    |
|               | ``kill_process``, output, ``bind_env``              |                          |
| ``sessions``  | the ``ShellSessions`` part: ``open_session``        | holding ``sessions``     |
| ``run_once``  | the ``Launcher`` part (``run_once`` is the base's)  | holding a ``launcher``   |
| ``pause``     | the ``Pauser`` part: ``pause``, ``resume``          | holding a ``pauser``     |
| ``ports``     | the ``Forwarder`` part: ``expose``                  | holding a ``forwarder``  |
| ``egress``    | the ``Egress`` part (an allowlist's proxy)          | ``NETWORK_ALLOWLIST``    |
| ``pty``       | the ``Terminals`` part (and the ``Pty`` handle)     | holding ``terminals``    |
| ``snapshots`` | the ``Snapshotter`` part (its public calls:         | holding a ``snapshotter``|
|               | ``compute.snapshots``, ``Sandbox.snapshot/fork``)   |                          |

Each refuses with one sentence when the provider holds no such part (captures list nothing). The
channel (``compute.channel``) gives processes and sessions to any provider with a byte stream.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import anyio

from praisonai._errors import ConfigError
from praisonai._limits import PTY_DEFAULT_COLS, PTY_DEFAULT_ROWS, check_timeout
from praisonai._types import Capability, CaptureInfo, InstanceInfo, ProcessInfo
from praisonai.compute import _activity, lifecycle
from praisonai.compute.abilities.captures import Capturer, SnapshotRef
from praisonai.compute.abilities.egress import Egress
from praisonai.compute.abilities.part import Part, held, held_capabilities, part
from praisonai.compute.abilities.pause import Pauser
from praisonai.compute.abilities.ports import Forwarder, NoForwards
from praisonai.compute.abilities.processes import ProcessTable
from praisonai.compute.abilities.pty import Pty, Terminals, pty_argv, pty_size
from praisonai.compute.abilities.run_once import Launcher
from praisonai.compute.abilities.sessions import ShellSessions
from praisonai.compute.abilities.snapshots import SnapshotInfo, Snapshotter
from praisonai.compute.requests import checked_env
from praisonai.runtime.processes import checked_id, found_one

if TYPE_CHECKING:
    from praisonai.runtime.session import ShellSession

__all__ = [
    "Capturer",
    "Egress",
    "Forwarder",
    "Launcher",
    "NoForwards",
    "OptionalAbilities",
    "Part",
    "Pauser",
    "ProcessTable",
    "Pty",
    "ShellSessions",
    "SnapshotInfo",
    "SnapshotRef",
    "Snapshotter",
    "Terminals",
    "held",
    "part",
]


class OptionalAbilities:
    """Every method of :class:`~praisonai.compute.base.ComputeProvider` that a provider may lack:
    the declaration of each kind of part (``compute.abilities.part``, ``None`` here) and the
    public method that checks the id, asks for the part, calls it and marks the ledger."""

    name: ClassVar[str]
    capabilities: frozenset[Capability]

    if TYPE_CHECKING:  # ComputeProvider writes it: refuse an id that is not one of this provider's

        def _check_id(self, instance_id: object) -> None: ...

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A class's ``capabilities`` are what it declares for its core plus what its parts bring:
        a kind of part decides its capability alone (declaring it without the part takes nothing)."""
        super().__init_subclass__(**kwargs)
        brought, decided = held_capabilities(cls)
        cls.capabilities = (frozenset(cls.capabilities) - decided) | brought

    # ---- pause: the pauser ------------------------------------------------------------------

    @part(Capability.PAUSE, held=False)
    def pauser(self) -> Pauser | None:
        """The part that pauses and resumes instances, or None: the provider cannot."""
        return None

    async def pause(self, instance_id: str) -> InstanceInfo:
        """Stop the instance keeping its filesystem; :meth:`resume` brings it back under the same
        id. Its processes end (E2B and Tenki keep memory too); its ledger row says ``paused``. Idempotent.

        Raises:
            UnsupportedFeatureError: the provider lacks ``Capability.PAUSE``.
            InstanceNotFoundError: no such instance.
        """
        self._check_id(instance_id)
        pauser = held(self.pauser, self.name, "pausing instances", "pause", Capability.PAUSE)
        info = await pauser.pause(instance_id)
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
        pauser = held(self.pauser, self.name, "resuming instances", "resume", Capability.PAUSE)
        info = await pauser.resume(instance_id)
        await lifecycle.mark(instance_id, "running")
        return info

    # ---- snapshots: the snapshotter ----------------------------------------------------------

    @part(Capability.SNAPSHOT, held=False)
    def snapshotter(self) -> Snapshotter | None:
        """The part that snapshots running instances and starts new ones from them
        (``compute.abilities.snapshots``; the public calls are ``Sandbox.snapshot``, ``fork``,
        ``restore`` and ``compute.snapshots``), or None: the provider cannot."""
        return None

    # ---- terminals ---------------------------------------------------------------------------

    @part(Capability.PTY, held=False)
    def terminals(self) -> Terminals | None:
        """The part that opens interactive terminals in instances, or None: the provider cannot."""
        return None

    async def open_pty(
        self,
        instance_id: str,
        *,
        command: str | Sequence[str] | None = None,
        cols: int = PTY_DEFAULT_COLS,
        rows: int = PTY_DEFAULT_ROWS,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> Pty:
        """An interactive terminal in the instance running ``command`` (a string for ``sh -c``, an
        argv list, or ``None`` for a shell), under the same isolation as :meth:`execute`. Use it
        as ``async with``: closing kills its whole process tree. See :class:`Pty`.

        Raises:
            UnsupportedFeatureError: the provider lacks ``Capability.PTY``.
            ConfigError: ``cols``/``rows`` out of range.
            InstanceNotFoundError: no such instance.
        """
        self._check_id(instance_id)
        argv, (cols, rows) = pty_argv(command), pty_size(cols, rows)
        terminals = held(self.terminals, self.name, "interactive terminals", "open_pty", Capability.PTY)
        pty = await terminals.open(instance_id, argv, cols, rows, cwd, dict(env or {}))
        pty.on_activity = lambda: _activity.touch(instance_id)
        _activity.touch(instance_id)
        return pty

    # ---- ports: the forwarder ----------------------------------------------------------------

    @part(Capability.PORTS, held=False)
    def forwarder(self) -> Forwarder | None:
        """The part that makes an instance's port a URL (``compute.abilities.ports``), or None:
        the provider cannot."""
        return None

    async def expose(self, instance_id: str, port: int) -> str:
        """A URL the caller can open that reaches ``port`` inside the instance (something must
        listen there). A forward lives on 127.0.0.1 only, as long as this provider object or the
        instance; the same port gives the same URL again. See ``compute.abilities.ports``.

        Raises:
            ConfigError: ``port`` is not a TCP port number (1-65535).
            UnsupportedFeatureError: the provider lacks ``Capability.PORTS`` or cannot reach it.
            InstanceNotFoundError: no such instance.
        """
        self._check_id(instance_id)
        if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
            raise ConfigError(f"port {port!r} is not a TCP port; give one from 1 to 65535", op="expose")
        forwarder = held(self.forwarder, self.name, "exposing ports", "expose", Capability.PORTS)
        return await forwarder.expose(instance_id, port)

    def stop_forwards(self, instance_id: str) -> None:
        """Stop this process's forwards to the instance: nothing listens on their URLs afterwards
        (``shutdown`` does it too; a ``Sandbox`` handle does it when closed)."""
        if (forwarder := self.forwarder) is not None:
            forwarder.stop(instance_id)

    def forwarding(self, instance_id: str, port: int) -> bool:
        """Whether ``expose`` started a forwarder in this process for that port: its URL works
        only while this process runs (the CLI's ``compute port`` then stays in the foreground)."""
        forwarder = self.forwarder
        return forwarder is not None and forwarder.forwarding(instance_id, port)

    # ---- egress ------------------------------------------------------------------------------

    @functools.cached_property
    def egress(self) -> Egress | None:
        """The provider's egress proxy for allowlists (``compute.abilities.egress``), or None: it
        has none (a cloud vendor enforces allowlists itself). Asked only by its own provider's
        provisioning; it brings no capability (``NETWORK_ALLOWLIST`` is declared)."""
        return None

    # ---- captures: the capturer, and the one-shot launcher ----------------------------------

    @part(Capability.CAPTURE, held=False)
    def capturer(self) -> Capturer | None:
        """The part that saves instances as captures and starts new ones from them, or None: the
        provider cannot (every instance then runs its own setup)."""
        return None

    async def list_captures(self) -> list[CaptureInfo]:
        """Saved post-setup states, most recently used first (none without ``capture``)."""
        capturer = self.capturer
        return [] if capturer is None else await capturer.captures()

    async def prune_captures(
        self, *, older_than_s: float | None = None, keep: int | None = None, dry_run: bool = False
    ) -> list[CaptureInfo]:
        """Remove captures unused for ``older_than_s`` seconds and all but the ``keep`` most
        recently used (those an instance still runs from stay); return what was (or would be)
        removed."""
        capturer = self.capturer
        if capturer is None:
            return []
        return await capturer.prune(older_than_s=older_than_s, keep=keep, dry_run=dry_run)

    @part(None, held=False)
    def launcher(self) -> Launcher | None:
        """The part that runs one command in an instance of its own (``run_once``), or None: the
        provider has no one-shot path (a run then provisions, executes and shuts down)."""
        return None

    # ---- background processes and bound env: the process table ------------------------------

    @part(Capability.PROCESSES, held=False)
    def processes(self) -> ProcessTable | None:
        """The part that runs background processes in instances and binds env there, or None:
        the provider cannot."""
        return None

    async def start_process(
        self, instance_id: str, command: str, *, cwd: str | None = None, env: Mapping[str, str] | None = None
    ) -> ProcessInfo:
        """Start ``command`` in the background and return at once. Its output is spooled inside
        the instance, so any process can read it, wait for it or kill it later by its id."""
        self._check_id(instance_id)
        table = _table(self)
        _activity.touch(instance_id)
        return await table.start(instance_id, command, cwd, checked_env(env or {}))

    async def list_processes(self, instance_id: str) -> list[ProcessInfo]:
        """Every background process started in the instance, by any client."""
        self._check_id(instance_id)
        table = _table(self)
        _activity.touch(instance_id)
        return await table.started(instance_id)

    async def get_process(self, instance_id: str, process_id: str) -> ProcessInfo:
        """The background process's state (output, wait and kill look it up here first)."""
        self._check_id(instance_id)
        table = _table(self)
        _activity.touch(instance_id)  # polling a process (wait_process) is activity too
        found = await table.started(instance_id, checked_id(process_id))
        return found_one(found, process_id, instance_id)

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
        await self.get_process(instance_id, process_id)
        spooled: Literal["out", "err"] = "out" if stream == "stdout" else "err"
        return await _table(self).output(instance_id, process_id, spooled, offset, limit)

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
        await self.get_process(instance_id, process_id)
        await _table(self).kill(instance_id, process_id)

    async def bind_env(self, instance_id: str, env: Mapping[str, str]) -> None:
        """Add ``env`` to the environment of every later command in the instance (exec,
        background processes and sessions, from any process); a later binding overrides an
        earlier one name by name. For env that must not exist before the instance is handed out
        (the secrets of a warm pool's claimer)."""
        self._check_id(instance_id)
        table = _table(self, "binding env to an instance", "bind_env")
        await table.bind_env(instance_id, checked_env(env))

    # ---- shell sessions ----------------------------------------------------------------------

    @part(Capability.SESSIONS, held=False)
    def sessions(self) -> ShellSessions | None:
        """The part that opens persistent shells in instances, or None: the provider cannot."""
        return None

    async def open_session(self, instance_id: str, *, cwd: str | None = None) -> ShellSession:
        """A persistent shell in the instance (cwd, variables and functions persist).

        Its traffic is activity: every command or input sent, output received and interrupt, and
        a command counts as long as it runs (here and, on docker, for the instance's watchdog)."""
        self._check_id(instance_id)
        sessions = held(self.sessions, self.name, "shell sessions", "session", Capability.SESSIONS)
        _activity.touch(instance_id)
        session = await sessions.open(instance_id, cwd)
        _activity.watch_session(instance_id, session)
        return session


def _table(
    provider: OptionalAbilities, what: str = "background processes", op: str = "process"
) -> ProcessTable:
    """The provider's process table, or the one-sentence refusal of ``what`` (operation ``op``)."""
    return held(provider.processes, provider.name, what, op, Capability.PROCESSES)
