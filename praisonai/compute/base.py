"""The compute contract: one async base class every provider implements.

The public methods keep the names of PraisonAI's ``ComputeProviderProtocol`` (``provision``,
``execute``, ``shutdown``, ``get_status``, ``upload_file``, ``download_file``, ``list_instances``)
so code written for it runs unchanged. They do the cross-cutting work — config validation,
capability checks, defaults, activity, clean-up on failure (``praisonai.compute.lifecycle``) —
and call a small set of ``_``-prefixed primitives that a provider implements.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import anyio

from praisonai import _limits, _telemetry, _transfer
from praisonai._errors import ConfigError, ExecError, UnsupportedFeatureError
from praisonai._types import (
    UNSET,
    Capability,
    ExecResult,
    InstanceInfo,
    OutputSink,
    Stdin,
    Unset,
)
from praisonai.compute import _activity, lifecycle, requests
from praisonai.compute.abilities import OptionalAbilities, SnapshotRef
from praisonai.compute.capabilities import unmet
from praisonai.compute.config import ComputeConfig
from praisonai.compute.files import Files, FileTree, ShellFiles
from praisonai.compute.hooks import ProviderHooks
from praisonai.compute.options import ProviderOptions
from praisonai.compute.requests import check_instance_id, exec_request, is_instance_id

__all__ = ["SYSTEM_PATH", "ComputeProvider", "SnapshotRef"]

_P = TypeVar("_P", bound="ComputeProvider")

#: The PATH of a clean environment (local and SSH instances; images bring their own).
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

log = _telemetry.logger("compute")


class ComputeProvider(ProviderHooks, OptionalAbilities):
    """Hands out instances and runs commands and file operations in them. Async, written once.

    A provider author reads three places: the nine primitives it MUST write
    (``praisonai.compute.hooks.ProviderHooks``: ``_create``, ``_destroy``, ``_status``, ``_list``,
    ``_exec``, ``_read``, ``_write``, ``_upload``, ``_download``); the optional ability groups in
    ``praisonai.compute.abilities`` (captures, processes, sessions, pause…), each a part the
    provider holds, its capability following; and this class's class attributes (``name``,
    ``capabilities``, ``requires``, ``options_model``). ``provision`` rejects a config that needs
    an undeclared capability, and the methods of an ability a provider lacks raise
    ``UnsupportedFeatureError``. There are two ways to write one:

    (a) **Native exec.** A provider whose SDK runs a command and returns its result (E2B
        ``commands.run``, Daytona ``process.exec``) implements ``_exec`` (honouring the
        request's cwd, env, stdin, timeout with partial output, and output cap) and the file
        primitives with its SDK's calls, subclassing this class alone. It carries no channel
        code; background processes and sessions are then unsupported unless it holds their parts.
        ``praisonai.compute.testing.fake.FakeProvider`` is a complete example in one module.
    (b) **A byte stream.** A provider that can only start a process with stdin/stdout/stderr
        attached (docker exec, an SSH channel, a local pipe) subclasses
        ``praisonai.compute.channel.ChannelMixin`` and implements ``_transport`` (and
        ``_channel_path``): it gets exec, streaming and file reads and writes through the
        instance's helper, and holds its parts for background processes (with ``bind_env``)
        and sessions; it overrides any of them with a native call (or a part) of its own.

    Every provider also has the file API ``files`` (``praisonai.compute.files.Files``: ``list``,
    ``exists``, ``stat``, ``remove``, ``rename``, ``mkdir``), done by its ``file_tree`` part: by
    default a script inside the instance through ``execute``; a provider with native calls holds
    its own (local's fds beneath its workspace).

    Either way ledger rows, labels, setup steps and captures are generic
    (``praisonai.compute.lifecycle``); a provider does not write them. It is registered by one
    entry-point line in the ``praisonai.compute`` group (or ``registry.register`` in-process).
    """

    name: ClassVar[str]
    capabilities: frozenset[Capability] = frozenset()
    #: Modules the provider's SDK brings, and the pip extra that installs them.
    requires: ClassVar[tuple[str, ...]] = ()
    extra: ClassVar[str] = ""
    #: How ``praisonai env plan`` describes a field this provider honours its own way, where the
    #: capability table alone would mislead: ``{field: (level, why)}``, level ``native``,
    #: ``emulated`` or ``unsupported`` (e.g. Fly's idle timeout: a watchdog, not a vendor setting).
    plan_notes: ClassVar[Mapping[str, tuple[str, str]]] = {}

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

    #: The provider's options as data (``praisonai.compute.options``): a frozen pydantic model
    #: whose ``type`` is the provider's name. The ledger stores ``options.to_record()``.
    options_model: ClassVar[type[ProviderOptions]] = ProviderOptions

    @property
    def options(self) -> ProviderOptions:
        """What this provider was built with, as data: ``type(self).from_options(self.options)``
        is an equivalent provider (it reaches the same instances, from any process). A provider
        with settings overrides this and ``options_model``; secrets are ``SecretStr`` fields."""
        return self.options_model(type=self.name)

    @classmethod
    def from_options(cls: type[_P], options: ProviderOptions) -> _P:
        """The provider ``options`` (an instance of ``options_model``) describes. By default the
        fields but ``type`` are passed to the constructor as keyword arguments; a provider whose
        constructor takes something else overrides this. A secret left out of ``options`` (``None``)
        is looked up where the constructor looks for it when not given.

        Raises:
            ConfigError: ``options`` are another provider's.
        """
        if not isinstance(options, cls.options_model) or options.type != cls.name:
            raise ConfigError(
                f"the {cls.name} provider takes {cls.options_model.__name__}, "
                f"not {type(options).__name__} of type {options.type!r}",
                op="config",
            )
        return cls(**options.settings())

    # ---- lifecycle -------------------------------------------------------------------------

    async def provision(self, config: object = None) -> InstanceInfo:
        """Create an instance, install its packages and run its setup.

        The instance is in the ledger (``praisonai._ledger``) from before it is created, as
        "provisioning", then "running"; a failed provision removes the instance and its row.
        Once provisioned, this process shuts it down when the config's ``lifetime`` says so:
        idle too long (with ``auto_shutdown``) or past its ``ttl_s`` (``_reaper``).

        Raises:
            ConfigError: the config is invalid, or asks for something this provider cannot do.
            ProvisionError: packages or setup failed; the instance was removed.
        """
        cfg = ComputeConfig.coerce(config)
        self.check_supported(cfg)
        with _telemetry.span("provision", {"praisonai.provider": self.name}) as traced:
            info = await lifecycle.provision(self, cfg)
            if traced is not None:
                traced.set_attribute("praisonai.instance_id", info.instance_id)
        return info

    def check_supported(self, cfg: ComputeConfig) -> None:
        """Reject, with one sentence, every field of ``cfg`` this provider cannot honour."""
        if missing := [need.shown for need in unmet(cfg, self.capabilities)]:
            raise UnsupportedFeatureError(
                f"the {self.name} provider cannot honour {', '.join(missing)}; "
                f"remove it from the config or choose a provider that supports it",
                op="provision",
            )

    async def shutdown(self, instance_id: str) -> bool:
        """Stop and remove the instance at once. Idempotent: ``False`` when nothing was there.
        Its ledger row goes too, once the instance is gone."""
        self._check_id(instance_id)
        if (forwarder := self.forwarder) is not None:
            forwarder.stop(instance_id)  # nothing listens for it any more (expose)
        existed = await self._destroy(instance_id)
        await lifecycle.forget(instance_id)
        log.info("shut down %s (%s)", instance_id, "removed" if existed else "already gone")
        return existed

    def handoff_key(self, instance_id: str) -> str | None:
        """Give away this instance's main channel: the key (docker: the nonce of the helper on the
        container's main stdin) the process that claims it from a warm pool needs to adopt it;
        this process will not open that channel itself any more. None when the provider has no
        such channel or it is already open. Default: None."""
        return None

    def adopt(self, instance_id: str, key: str) -> None:
        """This process now owns the instance (claimed from a warm pool), whose main channel was
        handed off with ``key``: its next channel is that one. The key is one use and only the
        claimer's: a provider with a main channel refuses it (``ConfigError``) to any process the
        ledger does not name as the owner, and to the owner a second time. Default: nothing."""

    async def get_status(self, instance_id: str) -> InstanceInfo:
        """The instance's current state. Raises ``InstanceNotFoundError`` for an unknown id."""
        self._check_id(instance_id)
        return await self._status(instance_id)

    async def list_instances(self) -> list[InstanceInfo]:
        """Every instance of this provider, created by any process (what does not carry an
        instance id of this provider is not one of its instances)."""
        return [info for info in await self._list() if is_instance_id(info.instance_id, self.name)]

    # ---- exec ------------------------------------------------------------------------------

    async def execute(
        self,
        instance_id: str,
        command: str | Sequence[str],
        timeout: float | Unset | None = UNSET,
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        max_output: int | None = None,
        on_output: OutputSink | None = None,
        stdin: Stdin | str | None = None,
        privileged: bool = False,
    ) -> ExecResult:
        """Run a shell command (a string for ``sh -c``, or an argv list) in the instance.

        stdin is closed unless ``stdin`` gives its bytes (text is UTF-8 encoded), so a bare
        ``cat`` returns at once; an async iterable of bytes streams it (each chunk as it comes).
        ``on_output`` receives output chunks while the command runs; ``privileged`` runs it as the
        instance's own user (root, as setup: ``compute.separation``) rather than the commands' uid,
        giving up the separation (it could forge other calls' results).

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
        request = exec_request(
            command, timeout, cwd=cwd, env=env, max_output=max_output, on_output=on_output, stdin=stdin
        )
        request = dataclasses.replace(request, privileged=privileged)
        started = time.monotonic()
        # A provider that cannot kill at the deadline must still not hang its caller.
        guard = None if request.timeout is None else request.timeout + 2 * _limits.KILL_GRACE_S
        await self._before_exec(instance_id)  # not the command's time (ssh: its helper's start)
        with _call(self.name, "exec", instance_id), anyio.move_on_after(guard) as scope:
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
        requests.check_instance_path(path, "read_file")
        with _activity.in_use(instance_id):
            return await self._read(instance_id, path)

    async def write_file(self, instance_id: str, path: str, data: bytes | str) -> None:
        """Write bytes (text is UTF-8 encoded) exactly; parent directories are created."""
        self._check_id(instance_id)
        requests.check_instance_path(path, "write_file")
        with _activity.in_use(instance_id):
            await self._write(instance_id, path, data.encode() if isinstance(data, str) else data)

    async def upload_file(
        self, instance_id: str, local_path: str | os.PathLike[str], remote_path: str
    ) -> bool:
        """Copy a local file or directory tree to ``remote_path`` in the instance."""
        self._check_id(instance_id)
        local = requests.checked_host_path(local_path, "upload", must_exist=True)
        requests.check_instance_path(remote_path, "upload")
        with (
            _call(self.name, "upload", instance_id),
            requests.host_path_errors("upload", local),
            _transfer.counted_at_the_end(local),  # where the provider counts nothing as it goes
        ):
            await self._upload(instance_id, local, remote_path)
        await self._ping(instance_id)
        return True

    async def download_file(
        self, instance_id: str, remote_path: str, local_path: str | os.PathLike[str]
    ) -> bool:
        """Copy a file or directory tree from the instance to ``local_path``."""
        self._check_id(instance_id)
        local = requests.checked_host_path(local_path, "download")
        requests.check_instance_path(remote_path, "download")
        with (
            _call(self.name, "download", instance_id),
            requests.host_path_errors("download", local),
            _transfer.counted_at_the_end(local),
        ):
            await self._download(instance_id, remote_path, local)
        await self._ping(instance_id)
        return True

    @functools.cached_property
    def files(self) -> Files:
        """The file API of this provider's instances (``list``, ``exists``, ``stat``, ``remove``,
        ``rename``, ``mkdir``), done by :attr:`file_tree` once ids and paths are checked."""
        return Files(self.file_tree, self._check_id)

    @functools.cached_property
    def file_tree(self) -> FileTree:
        """The files part: the generic script inside the instance, through ``execute`` (a
        provider with native calls overrides this with its own)."""
        return ShellFiles(self.execute)

    async def upload_archive(self, instance_id: str, archive: Path, remote_dir: str) -> bool:
        """Extract the local tar ``archive`` into the existing directory ``remote_dir`` natively,
        streamed (the workspace upload); ``False`` where the provider has no native way."""
        self._check_id(instance_id)
        requests.check_instance_path(remote_dir, "upload")
        with _activity.in_use(instance_id):
            done = await self._unpack_archive(instance_id, archive, remote_dir)
        if done:
            await self._ping(instance_id)
        return done

    async def _unpack_archive(self, instance_id: str, archive: Path, remote_dir: str) -> bool:
        """Extract the local tar ``archive`` (made by the workspace upload) into the existing
        directory ``remote_dir`` with the provider's own file API, streamed; ``False`` where the
        provider has none (the caller then uploads the archive and runs ``tar`` in the instance)."""
        return False

    async def _after_setup(self, instance_id: str) -> None:
        """Packages, setup or refresh ran (as the instance's own user): hand what they made in
        the working dir to the commands' uid where it differs (docker); by default nothing."""

    async def _ping(self, instance_id: str) -> None:
        """Tell the instance about activity it cannot see (a transfer that bypassed it); by
        default nothing (the channel mixin pings its helper)."""

    # ---- helpers ---------------------------------------------------------------------------

    def _check_id(self, instance_id: object) -> None:
        """Every public method that takes an instance id checks it first, before any file,
        container or process is touched: providers turn ids into host paths and names."""
        check_instance_id(instance_id, self.name)

    if not TYPE_CHECKING:  # at run time only: a type checker flags the old names

        def __getattr__(self, name: str) -> Any:
            """The file and process calls' names before they moved to ``files`` and
            ``processes``, for one release, each use said once as a ``DeprecationWarning``."""
            if name not in MOVED:
                raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
            group, call = MOVED[name]
            said = f"provider.{name}(...) is provider.{group}.{call}(...) now; the old name goes next release"
            warnings.warn(said, DeprecationWarning, stacklevel=2)
            return getattr(getattr(self, group), call)


#: The provider methods that became calls of its ``files`` and ``processes`` (and their new names).
MOVED = {
    "list_files": ("files", "list"),
    "file_exists": ("files", "exists"),
    "stat_path": ("files", "stat"),
    "remove_path": ("files", "remove"),
    "rename_path": ("files", "rename"),
    "make_dir": ("files", "mkdir"),
    "start_process": ("processes", "start"),
    "list_processes": ("processes", "list"),
    "get_process": ("processes", "get"),
    "read_process_output": ("processes", "output"),
    "wait_process": ("processes", "wait"),
    "kill_process": ("processes", "kill"),
    "bind_env": ("processes", "bind_env"),
}


@contextlib.contextmanager
def _call(provider: str, name: str, instance_id: str) -> Iterator[None]:
    """A call on the instance: in use (its idle clock waits), in an OpenTelemetry span."""
    attributes = {"praisonai.provider": provider, "praisonai.instance_id": instance_id}
    with _telemetry.span(name, attributes), _activity.in_use(instance_id):
        yield
