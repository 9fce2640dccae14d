"""The contract's optional abilities, one small module per group.

| module        | what the provider holds                              | turned on by               |
|---------------|------------------------------------------------------|----------------------------|
| ``captures``  | the ``Capturer`` part (``capturer``)                 | holding a ``capturer``     |
| ``processes`` | the ``ProcessTable`` part, used through ``Processes``| holding a ``process_table``|
|               | (``provider.processes.start/list/get/output/wait/``  |                            |
|               | ``kill/bind_env``)                                   |                            |
| ``sessions``  | the ``ShellSessions`` part: ``open_session``         | holding ``sessions``       |
| ``run_once``  | the ``Launcher`` part (``run_once`` is the base's)   | holding a ``launcher``     |
| ``pause``     | the ``Pauser`` part: ``pause``, ``resume``           | holding a ``pauser``       |
| ``ports``     | the ``Forwarder`` part: ``expose``                   | holding a ``forwarder``    |
| ``egress``    | the ``Egress`` part (an allowlist's proxy), held by  | ``NETWORK_ALLOWLIST``      |
|               | the providers that run one and asked only by them    |                            |
| ``pty``       | the ``Terminals`` part (and the ``Pty`` handle)      | holding ``terminals``      |
| ``snapshots`` | the ``Snapshotter`` part (its public calls:          | holding a ``snapshotter``  |
|               | ``compute.snapshots``, ``Sandbox.snapshot/fork``)    |                            |

Each refuses with one sentence when the provider holds no such part. The
channel (``compute.channel``) gives processes and sessions to any provider with a byte stream.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, cast

from praisonai._errors import ConfigError, UnsupportedFeatureError
from praisonai._limits import PTY_DEFAULT_COLS, PTY_DEFAULT_ROWS, check_timeout
from praisonai._types import Capability, ExecRequest, ExecResult, InstanceInfo, OutputSink, Stdin
from praisonai.compute import _activity, lifecycle
from praisonai.compute.abilities.captures import Capturer, SnapshotRef
from praisonai.compute.abilities.egress import Egress
from praisonai.compute.abilities.part import Part, held, held_capabilities, part
from praisonai.compute.abilities.pause import Pauser
from praisonai.compute.abilities.ports import Forwarder, NoForwards
from praisonai.compute.abilities.processes import Processes, ProcessTable
from praisonai.compute.abilities.pty import Pty, Terminals, pty_argv, pty_size
from praisonai.compute.abilities.run_once import Launcher
from praisonai.compute.abilities.sessions import ShellSessions
from praisonai.compute.abilities.snapshots import SnapshotInfo, Snapshotter
from praisonai.compute.config import ComputeConfig

if TYPE_CHECKING:
    from praisonai.compute.base import ComputeProvider
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
    "Processes",
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
    public method that checks the id, asks for the part, calls it and marks the ledger (or, for
    an ability of several calls, the front object that does: ``processes``)."""

    name: ClassVar[str]
    capabilities: frozenset[Capability]

    if TYPE_CHECKING:  # ComputeProvider writes them: refuse an id or a config this provider cannot take

        def _check_id(self, instance_id: object) -> None: ...
        def check_supported(self, cfg: ComputeConfig) -> None: ...

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

    # ---- captures: the capturer --------------------------------------------------------------

    @part(Capability.CAPTURE, held=False)
    def capturer(self) -> Capturer | None:
        """The part that saves instances as captures and starts new ones from them, or None: the
        provider cannot (every instance then runs its own setup)."""
        return None

    # ---- one-shot runs: the launcher -------------------------------------------------------

    @part(None, held=False)
    def launcher(self) -> Launcher | None:
        """The part that runs one command in an instance of its own (``run_once``), or None: the
        provider has no one-shot path (a run then provisions, executes and shuts down)."""
        return None

    def runs_once(self, config: object = None) -> bool:
        """Whether :meth:`run_once` can serve ``config``: this provider's ``launcher`` serves it, and
        the config asks for no step before the command (packages, setup, refresh), no ``ttl_s``
        (the instance lives as long as its command, within the run's timeout) and no pause."""
        cfg = ComputeConfig.coerce(config)
        if self.launcher is None or not self.launcher.serves(cfg):
            return False
        return not (cfg.packages or cfg.setup or cfg.refresh or cfg.ttl_s is not None or cfg.lifetime.pauses)

    async def run_once(
        self,
        config: object,
        command: str,
        *,
        timeout: float | None,
        on_output: OutputSink,
        stdin: Stdin | None = None,
        on_start: Callable[[], None] | None = None,
    ) -> ExecResult:
        """Run ``command`` (a shell line, for ``sh -c``) once, in a fresh instance of ``config``
        that is removed afterwards, as ``docker run --rm`` does; cheaper than ``provision``,
        ``execute`` and ``shutdown`` where the provider can start the instance with the command.

        Output goes to ``on_output`` as it comes and is not kept: the result's ``stdout`` and
        ``stderr`` are empty. ``stdin`` is the command's input (closed when ``None``);
        ``on_start`` is called once the command has been started. At the ``timeout`` the instance
        is removed, and the result says ``timed_out`` (exit code 124). The instance has a ledger
        row from before it exists until it is gone; when this call is cancelled, or fails, the
        instance is removed before it returns.

        Raises:
            ConfigError: the config is invalid, asks for what the provider cannot honour, or
                needs steps before the command (see :meth:`runs_once`).
            ProvisionError: the instance could not be started.
        """
        cfg = ComputeConfig.coerce(config)
        self.check_supported(cfg)
        if not self.runs_once(cfg) or (launcher := self.launcher) is None:
            raise UnsupportedFeatureError(
                f"the {self.name} provider cannot run this config in one shot (it has no one-shot "
                f"path, or the config has packages, setup or refresh steps, or a ttl): provision it instead",
                op="provision",
            )
        request = ExecRequest(
            command, timeout=check_timeout(timeout, allow_zero=False), on_output=on_output, stdin=stdin
        )
        return await lifecycle.run_once(cast("ComputeProvider", self), launcher, cfg, request, on_start)

    # ---- background processes and bound env: the process table ------------------------------

    @part(Capability.PROCESSES, held=False)
    def process_table(self) -> ProcessTable | None:
        """The part that runs background processes in instances and binds env there, or None:
        the provider cannot."""
        return None

    @functools.cached_property
    def processes(self) -> Processes:
        """Background processes and bound env (``start``, ``list``, ``get``, ``output``,
        ``wait``, ``kill``, ``bind_env``), done by :attr:`process_table`; without it each call
        refuses in one sentence."""
        return Processes(self.process_table, self.name, self._check_id)

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
