"""The compute contract: one async base class every provider implements.

The public methods keep the names of PraisonAI's ``ComputeProviderProtocol`` (``provision``,
``execute``, ``shutdown``, ``get_status``, ``upload_file``, ``download_file``, ``list_instances``)
so code written for it runs unchanged. They do the cross-cutting work — config validation,
capability checks, defaults, labels, setup, clean-up on failure — and call a small set of
``_``-prefixed primitives that a provider implements.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import getpass
import logging
import os
import re
import shlex
import socket
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

import anyio
import anyio.to_thread

from praisonai import _limits
from praisonai._errors import (
    ConfigError,
    ExecError,
    HomeUnusableError,
    InvalidInstanceIdError,
    PathNotFoundError,
    ProcessNotFoundError,
    ProvisionError,
    UnsupportedFeatureError,
)
from praisonai._ledger import Ledger, home_tag
from praisonai._limits import check_timeout
from praisonai._locks import file_lock
from praisonai._types import UNSET, Capability, CaptureInfo, ExecResult, InstanceInfo, ProcessInfo, _Unset
from praisonai.compute import _activity, _reaper
from praisonai.compute.capabilities import unmet
from praisonai.compute.config import ComputeConfig, PackageManager
from praisonai.runtime.channel import Channel
from praisonai.runtime.pool import ChannelPool
from praisonai.runtime.session import ShellSession
from praisonai.runtime.transport import Transport

#: Long provisioning steps (packages, setup, capture), one INFO line each, for a progress display.
progress = logging.getLogger("praisonai.progress")

#: Receives output as it is produced: ("stdout" | "stderr", bytes).
OutputSink = Callable[[Literal["stdout", "stderr"], bytes], None]

#: Label keys every provider records server-side, so any process can find and reap instances.
LABEL_INSTANCE = "praisonai.instance"
LABEL_PROVIDER = "praisonai.provider"
LABEL_OWNER = "praisonai.owner"
LABEL_DEFINITION = "praisonai.definition"
LABEL_CREATED = "praisonai.created"
#: Which PRAISONAI_HOME made the instance (``_ledger.home_tag``): ``gc`` touches only its own.
LABEL_HOME = "praisonai.home"
#: The PATH of a clean environment (local and SSH instances; images bring their own).
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclasses.dataclass(frozen=True, slots=True)
class ExecRequest:
    """One command as the primitive ``_exec`` receives it, every default already resolved."""

    command: str
    cwd: str | None
    env: Mapping[str, str]
    timeout: float | None
    max_output: int
    on_output: OutputSink | None = None
    stdin: bytes | None = None  # None: stdin is closed (/dev/null)


class ComputeProvider(ABC):
    """Hands out instances and runs commands and file operations in them. Async, written once.

    Subclasses set ``name`` and ``capabilities`` and implement the primitives. Optional abilities
    are declared in ``capabilities``; ``provision`` rejects a config that needs an undeclared one.
    """

    name: ClassVar[str]
    capabilities: frozenset[Capability] = frozenset()
    #: Modules the provider's SDK brings, and the pip extra that installs them.
    requires: ClassVar[tuple[str, ...]] = ()
    extra: ClassVar[str] = ""

    @property
    def provider_name(self) -> str:
        return self.name

    @property
    def is_available(self) -> bool:
        """True when the provider can provision now (SDK installed, engine reachable)."""
        return self.unavailable_reason() is None

    def unavailable_reason(self) -> str | None:
        """One sentence on why the provider cannot be used now, or ``None`` when it can."""
        return None

    def reconnect_spec(self) -> dict[str, Any]:
        """Keyword arguments that rebuild an equivalent provider in another process:
        ``type(self)(**spec)`` reaches the same instances. JSON-able and never a secret (the
        ledger stores it in clear); the new process finds credentials where this one did.
        Only what differs from the defaults is included."""
        return {}

    # ---- lifecycle -------------------------------------------------------------------------

    async def provision(self, config: object = None) -> InstanceInfo:
        """Create an instance, install its packages and run its setup.

        The instance is in the ledger (``praisonai._ledger``) from before it is created, as
        "provisioning", then "running"; a failed provision removes the instance and its row.
        Once provisioned, this process shuts it down when it has been idle for the config's
        ``idle_timeout_s`` (with ``auto_shutdown``) or has lived ``ttl_s`` (``_reaper``).

        Raises:
            ConfigError: the config is invalid, or asks for something this provider cannot do.
            ProvisionError: packages or setup failed; the instance was removed.
        """
        cfg = ComputeConfig.coerce(config)
        self.check_supported(cfg)
        instance_id = f"{self.name}_{uuid.uuid4().hex[:12]}"
        ledger = Ledger.default()
        policy = _activity.Policy.of(cfg)
        try:
            await self._record(instance_id, policy, ledger)
            _activity.adopt(instance_id, self, policy, ledger)
            info = await self._build(instance_id, cfg, self._labels(instance_id, cfg))
            await _off_loop(ledger.mark, instance_id, "running")
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self._discard(instance_id, ledger)
            raise
        _activity.ready(instance_id)
        if policy.reaps:
            _reaper.ensure_running()
        return info

    async def _record(self, instance_id: str, policy: _activity.Policy, ledger: Ledger) -> None:
        """The instance's ledger row, written before it exists, so that an instance whose creator
        dies mid-way is still found."""
        spec, owner = self.reconnect_spec(), owner_tag()
        record = functools.partial(
            ledger.record, idle_timeout_s=policy.idle_timeout_s, ttl_s=policy.ttl_s,
            auto_shutdown=policy.auto_shutdown,
        )  # fmt: skip
        await _off_loop(record, instance_id, self.name, spec, owner, time.time())

    async def _discard(self, instance_id: str, ledger: Ledger) -> None:
        """Undo a failed provision: remove what it made, then its row. When the removal fails
        too (the engine or host stopped answering), the row is marked ``failed``, which ``stop``
        and ``gc`` clear; the caller still gets the provision's own error."""
        try:
            await self._destroy(instance_id)
        except Exception:
            with contextlib.suppress(HomeUnusableError):  # the provision's error matters more
                await _off_loop(ledger.mark, instance_id, "failed")
        else:
            await _off_loop(ledger.forget, instance_id)  # only once it is surely gone
        finally:
            _activity.release(instance_id)

    def check_supported(self, cfg: ComputeConfig) -> None:
        """Reject, with one sentence, every field of ``cfg`` this provider cannot honour."""
        missing = [need.shown for need in unmet(cfg, self.capabilities)]
        if missing:
            raise UnsupportedFeatureError(
                f"the {self.name} provider cannot honour {', '.join(missing)}; "
                f"remove it from the config or choose a provider that supports it",
                op="provision",
            )

    async def shutdown(self, instance_id: str) -> bool:
        """Stop and remove the instance at once. Idempotent: ``False`` when nothing was there.
        Its ledger row goes too, once the instance is gone."""
        self._check_id(instance_id)
        existed = await self._destroy(instance_id)
        await _off_loop(Ledger.default().forget, instance_id)
        _activity.release(instance_id)
        return existed

    async def get_status(self, instance_id: str) -> InstanceInfo:
        """The instance's current state. Raises ``InstanceNotFoundError`` for an unknown id."""
        self._check_id(instance_id)
        return await self._status(instance_id)

    async def list_instances(self) -> list[InstanceInfo]:
        """Every instance of this provider, created by any process (what does not carry an
        instance id of this provider is not one of its instances)."""
        return [info for info in await self._list() if is_instance_id(info.instance_id, self.name)]

    # ---- one-shot runs (providers that implement ``_run_once``) -----------------------------

    def runs_once(self, config: object = None) -> bool:
        """Whether :meth:`run_once` can serve ``config``: this provider has a one-shot path, and
        the config asks for no step before the command (packages, setup, refresh) and no ``ttl_s``
        (the instance lives as long as its command, within the run's timeout)."""
        cfg = ComputeConfig.coerce(config)
        has_path = type(self)._run_once is not ComputeProvider._run_once
        return has_path and not (cfg.packages or cfg.setup or cfg.refresh or cfg.ttl_s is not None)

    async def run_once(
        self,
        config: object,
        command: str,
        *,
        timeout: float | None,
        on_output: OutputSink,
        stdin: bytes | None = None,
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
        if not self.runs_once(cfg):
            raise UnsupportedFeatureError(
                f"the {self.name} provider cannot run this config in one shot (it has no one-shot "
                f"path, or the config has packages, setup or refresh steps, or a ttl): provision it instead",
                op="provision",
            )
        request = ExecRequest(
            command=command, cwd=None, env={}, timeout=check_timeout(timeout, allow_zero=False),
            max_output=_limits.DEFAULT_MAX_OUTPUT_BYTES, on_output=on_output, stdin=stdin,
        )  # fmt: skip
        instance_id = f"{self.name}_{uuid.uuid4().hex[:12]}"
        ledger = Ledger.default()
        started = time.monotonic()
        try:
            await self._record(instance_id, _activity.Policy.of(cfg), ledger)
            result = await self._run_once(instance_id, cfg, self._labels(instance_id, cfg), request, on_start)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self._discard(instance_id, ledger)
            raise
        with anyio.CancelScope(shield=True):  # _run_once returned: the instance is gone, its row goes too
            await _off_loop(ledger.forget, instance_id)
        return result.replace(duration_s=time.monotonic() - started)

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

    # ---- exec ------------------------------------------------------------------------------

    async def execute(
        self,
        instance_id: str,
        command: str | Sequence[str],
        timeout: float | _Unset | None = UNSET,
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        max_output: int | None = None,
        on_output: OutputSink | None = None,
        stdin: bytes | str | None = None,
    ) -> ExecResult:
        """Run a shell command (a string for ``sh -c``, or an argv list) in the instance.

        stdin is closed unless ``stdin`` gives its bytes (text is UTF-8 encoded), so a bare
        ``cat`` returns at once. ``on_output`` receives output chunks while the command runs.

        ``timeout`` omitted means the default (``_limits.DEFAULT_EXEC_TIMEOUT_S``); ``None``
        means no limit. At the timeout the command's whole process tree inside the instance is
        killed and the partial output returned with ``timed_out=True``. Output beyond
        ``max_output`` bytes per stream keeps its head and tail (``truncated=True``). A non-zero
        exit is a result, not an error.

        At most once: the command runs once, or the caller is told it may have run. It is sent
        again only when it provably never reached the instance. When the exec channel dies after
        that, the result is recovered from the instance by job id if the command had finished;
        otherwise ``ChannelClosedError`` says it may have run (never re-run behind the caller).

        Raises:
            PathNotFoundError: ``cwd`` does not exist in the instance.
            InstanceNotFoundError: no such instance.
            ChannelClosedError: the channel died while the command ran; it may have run.
            ExecError: the command could not be run or its result was lost (e.g. a full spool).
        """
        self._check_id(instance_id)
        _check_exec_args(command, cwd, env, max_output, stdin)
        request = ExecRequest(
            command=command if isinstance(command, str) else shlex.join(command),
            cwd=cwd,
            env=_checked_env(env or {}),
            timeout=_resolve_timeout(timeout),
            max_output=max_output or _limits.DEFAULT_MAX_OUTPUT_BYTES,
            on_output=on_output,
            stdin=stdin.encode() if isinstance(stdin, str) else None if stdin is None else bytes(stdin),
        )
        if not request.command.strip():
            raise ConfigError("the command is empty", op="exec")
        started = time.monotonic()
        # A provider that cannot kill at the deadline must still not hang its caller.
        guard = None if request.timeout is None else request.timeout + 2 * _limits.KILL_GRACE_S
        with _activity.in_use(instance_id), anyio.move_on_after(guard) as scope:
            result = await self._exec(instance_id, request)
        if scope.cancelled_caught:
            raise ExecError(f"{self.name} did not return from a timed-out command", op="exec")
        return result.replace(duration_s=time.monotonic() - started)

    # ---- files -----------------------------------------------------------------------------

    async def read_file(self, instance_id: str, path: str) -> bytes:
        """The file's bytes. Relative paths resolve against the instance's working dir.

        Raises:
            PathNotFoundError: no such file. ``IsADirectoryError``: the path is a directory.
        """
        self._check_id(instance_id)
        with _activity.in_use(instance_id):
            return await self._read(instance_id, path)

    async def write_file(self, instance_id: str, path: str, data: bytes | str) -> None:
        """Write bytes (text is UTF-8 encoded) exactly; parent directories are created."""
        self._check_id(instance_id)
        with _activity.in_use(instance_id):
            await self._write(instance_id, path, data.encode() if isinstance(data, str) else data)

    async def upload_file(self, instance_id: str, local_path: str | os.PathLike[str], remote_path: str) -> bool:
        """Copy a local file or directory tree to ``remote_path`` in the instance."""
        self._check_id(instance_id)
        local = Path(local_path)
        if not local.exists():
            raise PathNotFoundError(f"no local file or directory {local}", op="upload")
        with _activity.in_use(instance_id):
            await self._upload(instance_id, local, remote_path)
        await self._ping(instance_id)
        return True

    async def download_file(self, instance_id: str, remote_path: str, local_path: str | os.PathLike[str]) -> bool:
        """Copy a file or directory tree from the instance to ``local_path``."""
        self._check_id(instance_id)
        with _activity.in_use(instance_id):
            await self._download(instance_id, remote_path, Path(local_path))
        await self._ping(instance_id)
        return True

    async def _ping(self, instance_id: str) -> None:
        """Show the instance activity it cannot see — a transfer that bypassed its helper (docker's
        archive API) — so an instance that stops itself when idle (docker's watchdog) counts it.
        Only over a channel that is open already: opening one costs more than the ping is worth."""
        channel = self._channels.peek(instance_id)
        if channel is not None:
            await channel.post("__p_ping")

    # ---- background processes (providers with an exec channel) -------------------------------

    async def start_process(
        self, instance_id: str, command: str, *, cwd: str | None = None, env: Mapping[str, str] | None = None
    ) -> ProcessInfo:
        """Start ``command`` in the background and return at once. Its output is spooled inside
        the instance, so any process can read it, wait for it or kill it later by its id."""
        self._check_id(instance_id)
        _activity.touch(instance_id)
        where = await self._channel_cwd(instance_id, cwd)
        checked = _checked_env(env or {})
        return await self._channels.run(instance_id, lambda ch: ch.start(command, cwd=where, env=checked))

    async def list_processes(self, instance_id: str) -> list[ProcessInfo]:
        """Every background process started in the instance, by any client."""
        self._check_id(instance_id)
        _activity.touch(instance_id)
        return await self._channels.run(instance_id, lambda ch: ch.processes())

    async def get_process(self, instance_id: str, process_id: str) -> ProcessInfo:
        """The background process's state (output, wait and kill look it up here first)."""
        self._check_id(instance_id)
        _activity.touch(instance_id)  # polling a process (wait_process) is activity too
        found = await self._channels.run(instance_id, lambda ch: ch.processes(_process_id(process_id)))
        if not found:
            raise ProcessNotFoundError(f"no background process {process_id!r} in {instance_id}", op="process")
        return found[0]

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
        name: Literal["out", "err"] = "out" if stream == "stdout" else "err"
        return await self._channels.run(
            instance_id,
            lambda ch: ch.read_file(ch.process_file(process_id, name), offset, limit),
        )

    async def wait_process(self, instance_id: str, process_id: str, timeout: float | None = None) -> ProcessInfo:
        """Wait until the process ends (or ``timeout`` passes) and return its state."""
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
        await self._channels.run(instance_id, lambda ch: ch.kill_process(process_id))

    async def open_session(self, instance_id: str, *, cwd: str | None = None) -> ShellSession:
        """A persistent shell in the instance (cwd, variables and functions persist).

        Its traffic is activity: every command or input sent, output received and interrupt, and
        a command counts as long as it runs (here and, on docker, for the instance's watchdog)."""
        self._check_id(instance_id)
        _activity.touch(instance_id)
        where = await self._channel_cwd(instance_id, cwd)

        async def signal_group(pgid: int, name: str) -> None:
            _activity.touch(instance_id)
            await self._channels.run(instance_id, lambda ch: ch.request("__p_signal", str(pgid), name))

        def open_transport(argv: list[str]) -> Transport:
            return _activity.StampedTransport(self._session_transport(instance_id, argv), instance_id)

        env_file = f"{self._spool(instance_id)}/env"  # session.sh also finds the spool by it
        session = ShellSession(open_transport, signal_group, where, env_file)
        _activity.watch_session(instance_id, session)
        return session

    async def bind_env(self, instance_id: str, env: Mapping[str, str]) -> None:
        """Add ``env`` to the environment of every later command in the instance — exec,
        background processes and sessions, from any process; a later binding overrides an
        earlier one name by name. For env that must not exist before the instance is handed out
        (the secrets of a warm pool's claimer). Values travel length-framed, never on a command line."""
        self._check_id(instance_id)
        checked = _checked_env(env)
        text = "".join(f"{name}={shlex.quote(value)}\n" for name, value in checked.items()).encode()
        await self._channels.run(instance_id, lambda ch: ch.bind_env(text))

    # ---- the exec channel: a provider that can start a process with pipes gets it all --------

    def _transport(self, instance_id: str, argv: list[str]) -> Transport:
        """Start ``argv`` inside the instance with stdin/stdout/stderr attached (blocking)."""
        raise UnsupportedFeatureError(
            f"the {self.name} provider has no exec channel (background processes, sessions)", op="exec"
        )

    def _session_transport(self, instance_id: str, argv: list[str]) -> Transport:
        """Start a session's shell ``argv`` (blocking); by default as any other transport."""
        return self._transport(instance_id, argv)

    async def _channel_cwd(self, instance_id: str, cwd: str | None) -> str:
        """``cwd`` as an absolute path inside the instance (default: its working dir)."""
        raise UnsupportedFeatureError(f"the {self.name} provider has no exec channel", op="exec")

    def _spool(self, instance_id: str) -> str:
        """Where the helper keeps spooled output inside the instance."""
        return "/tmp/.praisonai"

    async def _channel_exec(self, instance_id: str, request: ExecRequest) -> ExecResult:
        """``_exec`` through the instance's helper: for providers whose commands all use it."""
        cwd = await self._channel_cwd(instance_id, request.cwd)
        return await self._channels.run(
            instance_id,
            lambda channel: channel.exec(
                request.command,
                cwd=cwd,
                env=request.env,
                timeout=request.timeout,
                max_output=request.max_output,
                stdin=request.stdin,
                on_output=request.on_output,
            ),
        )

    async def _channel_read(self, instance_id: str, target: str, shown: str) -> bytes:
        """``_read`` through the instance's helper (``cat``: a stream, no per-chunk requests)."""
        limit = _limits.MAX_READ_BYTES
        data = await self._channels.run(instance_id, lambda channel: channel.read_file(target, 0, limit + 1))
        if len(data) > limit:
            raise ValueError(f"{shown} is larger than {limit} bytes; use download")
        return data

    async def _open_channel(self, instance_id: str) -> Channel:
        """Start the instance's helper (a provider that must look the instance up first extends this)."""
        return await Channel.open(functools.partial(self._transport, instance_id), self._spool(instance_id))

    @property
    def _channels(self) -> ChannelPool:
        pool: ChannelPool | None = self.__dict__.get("_channel_pool")
        if pool is None:
            pool = self.__dict__["_channel_pool"] = ChannelPool(self._open_channel)
        return pool

    # ---- helpers ---------------------------------------------------------------------------

    def _check_id(self, instance_id: object) -> None:
        """Every public method that takes an instance id checks it first, before any file,
        container or process is touched: providers turn ids into host paths and names."""
        check_instance_id(instance_id, self.name)

    def _labels(self, instance_id: str, cfg: ComputeConfig) -> dict[str, str]:
        return {
            **cfg.labels,
            LABEL_INSTANCE: instance_id,
            LABEL_PROVIDER: self.name,
            LABEL_OWNER: owner_tag(),
            LABEL_DEFINITION: cfg.definition_hash(),
            LABEL_CREATED: str(int(time.time())),
            LABEL_HOME: home_tag(),
        }

    async def _build(self, instance_id: str, cfg: ComputeConfig, labels: dict[str, str]) -> InstanceInfo:
        """Create the instance and bring it to its definition.

        With a capture of this definition (providers with ``capture``), start from it and run only
        ``refresh``. Otherwise install packages and run setup, then capture the result, under a
        lock that makes a second process provisioning the same definition wait and reuse it.
        A failed setup raises before anything is captured.
        """
        if not self._captures(cfg):
            info = await self._create(instance_id, cfg, labels)
            await self._run_steps(instance_id, [*_package_commands(cfg.packages), *cfg.setup], cfg)
            return info
        tag = cfg.capture_tag()
        image = await self._capture_image(tag)
        if image is None:
            async with file_lock(f"capture-{tag}"):
                image = await self._capture_image(tag)  # built by another process while we waited
                if image is None:
                    info = await self._create(instance_id, cfg, labels)
                    await self._run_steps(instance_id, [*_package_commands(cfg.packages), *cfg.setup], cfg)
                    progress.info("capturing the instance for later starts")
                    await self._capture(instance_id, tag, cfg)
                    return info
        info = await self._create(instance_id, cfg.model_copy(update={"image": image}), labels)
        await self._run_steps(instance_id, cfg.refresh, cfg)
        return info

    def _captures(self, cfg: ComputeConfig) -> bool:
        """Whether provisioning ``cfg`` goes through captures: there is setup work to save."""
        return Capability.CAPTURE in self.capabilities and cfg.capture and bool(cfg.packages or cfg.setup)

    async def _capture_image(self, tag: str) -> str | None:
        """The image to start from when a capture named ``tag`` exists (providers with ``capture``)."""
        return None

    async def _capture(self, instance_id: str, tag: str, cfg: ComputeConfig) -> None:
        """Snapshot the instance as capture ``tag``, without ``cfg``'s env values."""
        raise UnsupportedFeatureError(f"the {self.name} provider cannot capture instances", op="capture")

    async def _run_steps(self, instance_id: str, steps: Sequence[str], cfg: ComputeConfig) -> None:
        """Run packages/setup/refresh commands in order, each within ``cfg.setup_timeout_s``;
        the first failure raises ProvisionError."""
        for number, step in enumerate(steps, 1):
            progress.info(f"setup {number}/{len(steps)}: {step}")
            result = await self.execute(instance_id, step, timeout=cfg.setup_timeout_s)
            if not result.ok:
                detail = (result.stderr or result.stdout).strip()[-2000:]
                limit = f"its setup_timeout of {cfg.setup_timeout_s:g}s"
                why = f"timed out after {limit}" if result.timed_out else f"exited {result.exit_code}"
                raise ProvisionError(f"setup step {step!r} {why}: {detail}", op="provision")

    async def _run_once(
        self,
        instance_id: str,
        cfg: ComputeConfig,
        labels: dict[str, str],
        request: ExecRequest,
        on_start: Callable[[], None] | None,
    ) -> ExecResult:
        """Create instance ``instance_id`` running ``request.command`` as its own work, stream its
        output to ``request.on_output``, kill it at ``request.timeout``, and return only once it is
        gone; when it raises, ``_destroy`` follows. Optional: a provider without it is served by
        provision, execute and shutdown."""
        raise UnsupportedFeatureError(f"the {self.name} provider has no one-shot path", op="provision")

    # ---- primitives a provider implements --------------------------------------------------

    @abstractmethod
    async def _create(self, instance_id: str, cfg: ComputeConfig, labels: dict[str, str]) -> InstanceInfo:
        """Create and start the instance. May leave partial state: ``_destroy`` follows on error."""

    @abstractmethod
    async def _destroy(self, instance_id: str) -> bool:
        """Remove the instance now, killing what runs in it; ``False`` if it did not exist."""

    @abstractmethod
    async def _status(self, instance_id: str) -> InstanceInfo:
        """Current state; raises ``InstanceNotFoundError`` for an unknown id."""

    @abstractmethod
    async def _list(self) -> list[InstanceInfo]:
        """Every instance of this provider, found from provider-side state (not process memory)."""

    @abstractmethod
    async def _exec(self, instance_id: str, request: ExecRequest) -> ExecResult:
        """Run ``request`` honouring its cwd, env, timeout (kill the tree) and output cap."""

    @abstractmethod
    async def _read(self, instance_id: str, path: str) -> bytes:
        """Read a whole file."""

    @abstractmethod
    async def _write(self, instance_id: str, path: str, data: bytes) -> None:
        """Write a whole file, creating parent directories."""

    @abstractmethod
    async def _upload(self, instance_id: str, local: Path, remote: str) -> None:
        """Copy a local file or directory into the instance."""

    @abstractmethod
    async def _download(self, instance_id: str, remote: str, local: Path) -> None:
        """Copy a file or directory out of the instance."""


#: An instance id as ``provision`` makes it: the provider's name, ``_``, 12 lowercase hex digits.
#: Never a path: no ``/``, and it starts with a letter.
INSTANCE_ID = re.compile(r"(?P<provider>[A-Za-z][A-Za-z0-9_.-]*)_[0-9a-f]{12}")


def is_instance_id(text: object, provider: str | None = None) -> bool:
    """Whether ``text`` is an instance id (of ``provider``, when given)."""
    match = INSTANCE_ID.fullmatch(text) if isinstance(text, str) else None
    return match is not None and provider in (None, match["provider"])


def check_instance_id(instance_id: object, provider: str | None = None) -> None:
    """Refuse what is not an instance id (of ``provider``, when given).

    Raises:
        InvalidInstanceIdError (ValueError): it is not one; the message shows the expected form.
    """
    if not is_instance_id(instance_id, provider):
        form = f"{provider or '<provider>'}_<12 hex digits>"
        raise InvalidInstanceIdError(
            f"{instance_id!r} is not an instance id{f' of the {provider} provider' if provider else ''}: "
            f"ids look like {form}, e.g. {provider or 'docker'}_3f9a1c2b7d4e",
            op="lookup",
        )


def owner_tag() -> str:
    """Who created an instance: ``user@host:pid`` (lets ``gc`` tell live owners from dead ones)."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid())
    return f"{user}@{socket.gethostname()}:{os.getpid()}"


async def _off_loop(fn: Callable[..., None], *args: Any) -> None:
    """A ledger write in a worker thread: it may wait on another process's lock."""
    await anyio.to_thread.run_sync(fn, *args)


def _resolve_timeout(timeout: object) -> float | None:
    if timeout is UNSET:
        return _limits.DEFAULT_EXEC_TIMEOUT_S
    return check_timeout(timeout, allow_zero=False)


def _check_exec_args(command: object, cwd: object, env: object, max_output: object, stdin: object) -> None:
    """Refuse, with one sentence, what the type hints of ``execute`` already exclude: it is
    called from untyped code (agents' tools, PraisonAI's SDK) and must not fail deep inside."""
    if isinstance(command, str):
        parts = [command]
    elif isinstance(command, Sequence) and command and all(isinstance(p, str) for p in command):
        parts = list(command)
    else:
        raise ConfigError(
            f"the command must be a string or a non-empty list of strings, not {command!r:.80}", op="exec"
        )
    if any("\0" in p for p in parts):
        raise ConfigError("the command contains a NUL byte, which no shell can run", op="exec")
    if cwd is not None and (not isinstance(cwd, str) or "\0" in cwd or not cwd):
        raise ConfigError(f"cwd must be a non-empty path without NUL bytes, not {cwd!r:.80}", op="exec")
    if env is not None and not isinstance(env, Mapping):
        raise ConfigError(f"env must be a mapping of names to strings, not {type(env).__name__}", op="exec")
    if max_output is not None and (isinstance(max_output, bool) or not isinstance(max_output, int)
                                   or max_output <= 0):  # fmt: skip
        raise ConfigError(f"max_output must be a positive number of bytes, not {max_output!r}", op="exec")
    if stdin is not None and not isinstance(stdin, bytes | bytearray | memoryview | str):
        raise ConfigError(f"stdin must be bytes, text or None, not {type(stdin).__name__}", op="exec")


def _process_id(process_id: str) -> str:
    if not re.fullmatch(r"p[0-9a-f]{12}", process_id):
        raise ProcessNotFoundError(f"{process_id!r} is not a background process id", op="process")
    return process_id


def _checked_env(env: Mapping[str, str]) -> Mapping[str, str]:
    return ComputeConfig.coerce({"env": dict(env)}).env


def _package_commands(packages: Mapping[PackageManager, list[str]]) -> list[str]:
    """One install command per manager. Names were validated (no leading dash) and are quoted."""
    quoted = {manager: " ".join(shlex.quote(n) for n in names) for manager, names in packages.items() if names}
    commands = {
        "apt": "apt-get update -qq && DEBIAN_FRONTEND=noninteractive "
        "apt-get install -y -qq --no-install-recommends {}",
        # The instance is the environment: Debian's "externally managed" guard does not apply.
        "pip": "PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --no-input --disable-pip-version-check {}",
        "npm": "npm install --global --no-fund --no-audit {}",
    }
    return [commands[m].format(quoted[m]) for m in ("apt", "pip", "npm") if m in quoted]
