"""AsyncSandbox: one instance of one provider, as an async context manager."""

from __future__ import annotations

import functools
import os
from collections.abc import AsyncIterable, Awaitable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from praisonai._errors import CommandFailedError, CommandTimeoutError, ConfigError, SandboxClosedError
from praisonai._types import UNSET, ExecResult, InstanceInfo, InstanceStatus, OutputSink, Unset
from praisonai.sandbox._classonly import ClassOnly
from praisonai.sandbox._process import AsyncProcess
from praisonai.sandbox._workbench import AsyncWorkbench

# Import light: ``from praisonai import Sandbox`` must not load the providers' machinery (config
# models, registry, ledger, channels, asyncio); the methods that need it import it when first called.
if TYPE_CHECKING:
    from praisonai.compute.abilities.snapshots import SnapshotInfo
    from praisonai.compute.base import ComputeProvider
    from praisonai.runtime.session import ShellSession
    from praisonai.sandbox._stream import ExecStream
    from praisonai.sandbox.provisioning import ProvisionPlan


class AsyncSandbox(AsyncWorkbench):
    """A handle on one instance.

    A sandbox made by :meth:`create` owns its instance: :meth:`close` (or leaving ``async with``)
    shuts it down. One made by :meth:`connect` only borrows it: ``close`` lets go and leaves the
    instance running; :meth:`shutdown` removes it in either case. ``close`` is idempotent.
    """

    def __init__(
        self, provider: ComputeProvider, info: InstanceInfo, *, owned: bool, plan: ProvisionPlan | None = None
    ) -> None:
        self.provider = provider
        self.info = info
        self.owned = owned
        #: How the instance was made: the effective config, the environment file read, the
        #: provider chosen (``None`` for a sandbox made by :meth:`connect`).
        self.plan = plan
        self._closed = False

    @property
    def id(self) -> str:
        """The instance's id (what ``praisonai compute ps`` shows)."""
        return self.info.instance_id

    @property
    def closed(self) -> bool:
        """Whether this handle was closed."""
        return self._closed

    @classmethod
    async def create(
        cls,
        compute: object = None,
        config: object = None,
        *,
        environment: str | os.PathLike[str] | bool | None = None,
        from_snapshot: SnapshotInfo | str | None = None,
        **fields: Any,
    ) -> AsyncSandbox:
        """Provision a new instance. ``compute``: a name, a provider, or ``None`` for the default
        (the environment file's ``backend`` when it names one, else docker when available, else
        local under bubblewrap; never this host unisolated, which only ``"local"`` named asks for).

        ``fields`` override the config's: ``create("docker", image="python:3.12", env={...})``.
        ``environment``: ``None`` (or ``True``) reads the ``.praisonai/environment.yaml`` found
        from the working directory, a path reads that file, ``False`` reads none. What ``config``
        and ``fields`` set wins over the file; ``env`` merges key by key and ``packages`` per
        manager (see :func:`praisonai.sandbox.environment.effective_config`). The one provisioning
        path: :func:`praisonai.sandbox.provisioning.plan`, then :meth:`from_plan`; the result's
        :attr:`plan` says what was chosen.

        ``from_snapshot`` (a ``SnapshotInfo``, an id or a name: :meth:`snapshot`): the instance's
        files are the snapshot's, its config (env, limits, network) this call's alone, and only the
        config's ``refresh`` steps run (as after a capture); ``compute`` defaults to the provider
        that holds the snapshot, and must be of its kind.

        Raises:
            EnvironmentFileError (ConfigError): the environment file is invalid.
            ConfigError: the config is invalid or asks for what the provider cannot honour.
            ProviderUnavailableError: ``None``, and neither docker nor bubblewrap can be used.
            ConfigError: ``from_snapshot`` is no snapshot of this home, or another provider's.
        """
        import anyio.to_thread

        from praisonai.compute import snapshots
        from praisonai.sandbox.provisioning import plan

        snapshot = None
        if from_snapshot is not None:
            snapshot = await anyio.to_thread.run_sync(
                functools.partial(snapshots.find, from_snapshot, op="provision")
            )
        if snapshot is not None and compute is None:
            compute = await anyio.to_thread.run_sync(snapshots.provider_of, snapshot)
        # Discovery stats directories up to the repository root, and choosing the default
        # provider asks docker whether it answers: keep both off the event loop.
        chosen = await anyio.to_thread.run_sync(
            functools.partial(plan, compute, config, environment=environment, resolve=None, **fields)
        )
        if snapshot is None:
            return await cls.from_plan(chosen)
        snapshots.check_provider(snapshot, chosen.provider.name, "provision")  # another's: refused
        info = await snapshots.provision_from(chosen.provider, chosen.config, snapshot)
        return cls(chosen.provider, info, owned=True, plan=chosen)

    @classmethod
    async def from_plan(cls, plan: ProvisionPlan, *, claim: bool = True) -> AsyncSandbox:
        """Provision what :func:`praisonai.sandbox.provisioning.plan` chose; the sandbox owns the
        instance and keeps the plan as :attr:`plan`. When the home has a warm pool of the same
        provider, provider options and definition (``praisonai compute warm``), one of its
        instances is claimed instead, with the config's env bound, and the pool refilled in
        the background (:func:`praisonai.compute.warm.claim`); ``claim=False`` always provisions
        (``env build``: a claimed instance would not build the definition's capture).

        Raises:
            ConfigError: the config asks for what the provider cannot honour.
        """
        from praisonai.compute import warm  # here: importing the sandbox stays light

        claimed = await warm.claim(plan.provider, plan.config) if claim else None
        info = claimed or await plan.provider.provision(plan.config)
        return cls(plan.provider, info, owned=True, plan=plan)

    @classmethod
    async def connect(cls, instance_id: str, compute: object = None) -> AsyncSandbox:
        """Attach to an existing instance, created by any process; a paused one is resumed. The
        provider defaults to the one named by the id's prefix (``docker_…`` → docker).

        Raises:
            InvalidInstanceIdError (ValueError): ``instance_id`` is not an instance id.
            InstanceNotFoundError: no such instance.
            ForeignInstanceError (PermissionError): another praisonai home made it.
        """
        from praisonai.compute.lifecycle import check_home
        from praisonai.compute.registry import compute_provider
        from praisonai.compute.requests import check_instance_id

        if compute is None:  # the provider checks the id against its own name
            check_instance_id(instance_id)
            compute = instance_id.rsplit("_", 1)[0]
        provider = compute_provider(compute)
        info = await provider.get_status(instance_id)
        check_home(instance_id, info.labels, "connect")  # before it is resumed or run in
        if info.status is InstanceStatus.PAUSED:  # kept across idle: back under the same id
            info = await provider.resume(instance_id)
        return cls(provider, info, owned=False)

    @ClassOnly
    @staticmethod
    async def run(
        command: str | Sequence[str],
        compute: object = None,
        config: object = None,
        *,
        environment: str | os.PathLike[str] | bool | None = None,
        timeout: float | Unset | None = UNSET,
        max_output: int | None = None,
        on_output: OutputSink | None = None,
        stdin: bytes | str | AsyncIterable[bytes] | None = None,
        check: bool = False,
        **fields: Any,
    ) -> ExecResult:
        """Run one command in a fresh instance and remove it, as ``docker run --rm`` does (and
        ``praisonai sandbox run``): ``compute``, ``config``, ``environment`` and ``fields`` as
        :meth:`create`; the command's arguments and the result as :meth:`exec`. Where the
        provider can, the instance is started with the command as its work (no helper, no idle
        instance); it is removed also when the call fails or is cancelled.
        """
        import anyio.to_thread

        from praisonai.sandbox._run import run_in_fresh
        from praisonai.sandbox.provisioning import plan

        chosen = await anyio.to_thread.run_sync(
            functools.partial(plan, compute, config, environment=environment, resolve=None, **fields)
        )
        return await run_in_fresh(
            chosen,
            command,
            timeout=timeout,
            max_output=max_output,
            on_output=on_output,
            stdin=stdin,
            check=check,
        )

    async def exec(
        self,
        command: str | Sequence[str],
        *,
        timeout: float | Unset | None = UNSET,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        check: bool = False,
        max_output: int | None = None,
        on_output: OutputSink | None = None,
        stdin: bytes | str | AsyncIterable[bytes] | None = None,
        privileged: bool = False,
    ) -> ExecResult:
        """Run a command; see :meth:`ComputeProvider.execute` for the contract.

        With ``check=True`` a non-zero exit raises :class:`CommandFailedError` and a timeout
        :class:`CommandTimeoutError`, both carrying the result. ``privileged=True`` runs it as
        root on docker, kubernetes, Fly and Tenki, giving up the separation from what frames the
        results for this command (E2B's ``user="root"``; see ``ComputeProvider.execute``).
        """
        self._ensure_open()
        result = await self.provider.execute(
            self.id,
            command,
            timeout,
            cwd=cwd,
            env=env,
            max_output=max_output,
            on_output=on_output,
            stdin=stdin,
            privileged=privileged,
        )
        if check and result.timed_out:
            raise CommandTimeoutError(result, str(command))
        if check and result.exit_code != 0:
            raise CommandFailedError(result, str(command))
        return result

    def stream(
        self,
        command: str | Sequence[str],
        *,
        timeout: float | Unset | None = UNSET,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        stdin: bytes | str | AsyncIterable[bytes] | None = None,
    ) -> ExecStream:
        """Yield :class:`OutputChunk` s as the command prints them, then its :class:`ExecResult`.

        The command starts when iteration does. Closing the stream (``aclose()``, leaving
        ``async with sandbox.stream(...) as items``, or breaking out of ``async for``) kills the
        command. Undelivered output is bounded; see :mod:`praisonai.sandbox._stream`.
        """
        self._ensure_open()
        from praisonai.sandbox._stream import ExecStream

        def run(sink: OutputSink) -> Awaitable[ExecResult]:
            return self.provider.execute(
                self.id, command, timeout, cwd=cwd, env=env, stdin=stdin, on_output=sink
            )

        return ExecStream(run)

    async def start(
        self, command: str, *, cwd: str | None = None, env: Mapping[str, str] | None = None
    ) -> AsyncProcess:
        """Start a background process; its output is kept in the instance (see :class:`AsyncProcess`)."""
        self._ensure_open()
        info = await self.provider.processes.start(self.id, command, cwd=cwd, env=env)
        return AsyncProcess(self.provider, self.id, info)

    async def processes(self) -> list[AsyncProcess]:
        """Every background process of the instance, started by any client."""
        self._ensure_open()
        return [AsyncProcess(self.provider, self.id, i) for i in await self.provider.processes.list(self.id)]

    async def process(self, process_id: str) -> AsyncProcess:
        """Reattach to a background process by its id."""
        self._ensure_open()
        return AsyncProcess(self.provider, self.id, await self.provider.processes.get(self.id, process_id))

    async def session(self, *, cwd: str | None = None) -> ShellSession:
        """A persistent shell: cwd, variables and functions persist between its commands."""
        self._ensure_open()
        return await self.provider.open_session(self.id, cwd=cwd)

    async def read_file(self, path: str) -> bytes:
        """The file's bytes (``FileNotFoundError`` when missing)."""
        self._ensure_open()
        _check_path(path)
        return await self.provider.read_file(self.id, path)

    async def write_file(self, path: str, data: bytes | str) -> None:
        """Write bytes (or UTF-8 text) exactly, creating parent directories."""
        self._ensure_open()
        _check_path(path)
        if not isinstance(data, bytes | bytearray | memoryview | str):
            raise ConfigError(f"data must be bytes or text, not {type(data).__name__}", op="write_file")
        await self.provider.write_file(self.id, path, data)

    async def upload(self, local_path: str | os.PathLike[str], remote_path: str) -> None:
        """Copy a local file or directory into the instance."""
        self._ensure_open()
        await self.provider.upload_file(self.id, local_path, remote_path)

    async def download(self, remote_path: str, local_path: str | os.PathLike[str]) -> None:
        """Copy a file or directory out of the instance."""
        self._ensure_open()
        await self.provider.download_file(self.id, remote_path, local_path)

    async def fork(self, n: int) -> list[AsyncSandbox]:
        """Snapshot this instance, then make ``n`` new instances from it, concurrently (this one
        keeps running); each owns its instance. They get this sandbox's config (env, limits,
        network; the env bound later with ``bind_env`` is not carried over). A failed fork
        removes what it made, the snapshot too; a successful one keeps the snapshot (listed by
        ``praisonai.compute.list_snapshots``, removed with ``remove_snapshot`` once the forks are
        gone).

        Raises:
            ConfigError: ``n`` is not 1 to ``praisonai._limits.FORK_MAX``.
            UnsupportedFeatureError: the provider cannot snapshot.
        """
        from praisonai.compute import snapshots
        from praisonai.compute.config import ComputeConfig
        from praisonai.sandbox.provisioning import ProvisionPlan

        self._ensure_open()
        cfg = self.plan.config if self.plan is not None else ComputeConfig()
        _, made = await snapshots.fork(self.provider, self.id, n, cfg)
        return [
            AsyncSandbox(self.provider, info, owned=True, plan=ProvisionPlan(self.provider, cfg))
            for info in made
        ]

    async def status(self) -> InstanceInfo:
        """The instance's current state, fresh from the provider."""
        self._ensure_open()
        self.info = await self.provider.get_status(self.id)
        return self.info

    async def shutdown(self) -> None:
        """Remove the instance now, whoever created it, and close this handle."""
        if not self._closed:
            self._closed = True
            await self.provider.shutdown(self.id)

    async def close(self) -> None:
        """Shut the instance down if this handle owns it; otherwise just let go. Idempotent."""
        if self.owned:
            await self.shutdown()
        if (forwarder := self.provider.forwarder) is not None:
            forwarder.stop(self.id)  # a handle let go takes its forwards (expose) along
        self._closed = True

    aclose = close

    async def __aenter__(self) -> AsyncSandbox:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<AsyncSandbox {self.id} on {self.provider.provider_name} ({state})>"

    def _ensure_open(self) -> None:
        if self._closed:
            raise SandboxClosedError(f"sandbox {self.id} is closed", op="sandbox")


def _check_path(path: object) -> None:
    """Refuse, in one sentence, a path no provider could use (agents' tools pass anything)."""
    if not isinstance(path, str) or not path or "\0" in path:
        raise ConfigError(f"a path must be a non-empty string without NUL bytes, not {path!r:.80}", op="path")
