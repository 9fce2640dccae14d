"""``ForeignProvider``: a provider object written to PraisonAI's protocol, as one of ours.

Everything goes through the object's async ``execute(instance_id, command, timeout)``: exec
options become a shell line, files go as a quoted heredoc (small text) or base64 in chunks
(binary, large), reads come back as base64 in chunks (see ``_shell``). Its own ``upload_file``,
``download_file``, ``get_status`` and ``list_instances`` are used when it has them.

What it cannot offer it does not declare: no persistent shell sessions, background processes or
captures (each command is its own shell). Its instances live in this process only: they get no
ledger row, since no other process can rebuild the object by name (``praisonai compute ps`` and
``gc`` never see them, and the cross-process reaper has nothing to reap); their life is the
object's and its caller's (``auto_shutdown`` and ``idle_timeout_s`` are passed to its
``provision``; SharedCompute and sandboxes shut them down on exit).
"""

from __future__ import annotations

import contextlib
import functools
import posixpath
import secrets
import weakref
from collections.abc import Awaitable
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import anyio

from praisonai import _limits
from praisonai._errors import (
    ConfigError,
    ExecError,
    InstanceNotFoundError,
    InvalidInstanceIdError,
    PathNotFoundError,
    PraisonAIError,
    ProvisionError,
    UnsupportedFeatureError,
)
from praisonai._output import exec_result
from praisonai._types import (
    Capability,
    ExecRequest,
    ExecResult,
    InstanceInfo,
    InstanceStatus,
    stdin_bytes,
)
from praisonai.compute import _activity, _tar, requests
from praisonai.compute.base import ComputeProvider
from praisonai.compute.config import ComputeConfig
from praisonai.compute.foreign import _files, _shell
from praisonai.compute.foreign._protocol import (
    ForeignConfig,
    exec_result_of,
    instance_id_of,
    protocol_problem,
    result_fields,
    status_of,
    usable_id,
)
from praisonai.compute.options import ProviderOptions
from praisonai.runtime.partial import partial_beside

#: Seconds a file operation's one command may take (it moves at most one chunk).
_FILE_OP_TIMEOUT_S = _limits.DEFAULT_EXEC_TIMEOUT_S

_T = TypeVar("_T")
_adapters: weakref.WeakKeyDictionary[Any, ForeignProvider] = weakref.WeakKeyDictionary()


class ForeignProvider(ComputeProvider):
    """A PraisonAI ``ComputeProviderProtocol`` object (``target``) behind our contract.

    Instance ids are the object's own (what its ``provision`` returned, as text), so code that
    compares them with the object's records keeps working. Raises ``TypeError`` (one sentence
    naming what is missing) for an object that lacks part of the protocol.
    """

    name: ClassVar[str] = "foreign"
    # Fields of PraisonAI's config its providers read; the object honours them, not we.
    capabilities = frozenset(
        {
            Capability.IMAGE,
            Capability.CPU_LIMIT,
            Capability.MEMORY_LIMIT,
            Capability.GPU,
            Capability.MOUNTS,
            Capability.PACKAGES,
            Capability.NETWORK_NONE,
            Capability.NETWORK_ALLOWLIST,
        }
    )

    def __init__(self, target: object) -> None:
        problem = protocol_problem(target)
        if problem is not None:
            raise TypeError(problem)
        self.target: Any = target
        self._theirs: dict[str, object] = {}  # our id (text) → the id the object returned
        self._working_dirs: dict[str, str] = {}
        self._gone: set[str] = set()  # shut down by us: a second shutdown does not call theirs

    @classmethod
    def around(cls, target: object) -> ForeignProvider:
        """The one adapter of ``target`` in this process (so every sandbox made from the same
        object knows its instances)."""
        try:
            adapter = _adapters.get(target)
        except TypeError:  # an object without weak references: a fresh adapter each time
            return cls(target)
        if adapter is None:
            adapter = _adapters[target] = cls(target)
        return adapter

    @property
    def provider_name(self) -> str:
        """The object's ``provider_name``, else its class name."""
        named = getattr(self.target, "provider_name", None)
        return named if isinstance(named, str) and named else type(self.target).__name__

    def unavailable_reason(self) -> str | None:
        if getattr(self.target, "is_available", True) is False:
            return (
                f"the {self.provider_name} provider object says it is not available (is_available is False)"
            )
        return None

    @property
    def options(self) -> ProviderOptions:
        return ProviderOptions(type=self.name)

    @classmethod
    def from_options(cls, options: ProviderOptions) -> ForeignProvider:
        raise ConfigError(
            "a provider object written to PraisonAI's protocol cannot be rebuilt from options "
            "(it lives in the process that made it): pass the object itself as compute=",
            op="config",
        )

    # ---- lifecycle -------------------------------------------------------------------------

    async def provision(self, config: object = None) -> InstanceInfo:
        """The object's ``provision`` with PraisonAI's config object (it installs packages and
        runs setup itself, as PraisonAI's providers do); then the working dir is made, where it
        can be (a provider running commands on a host may not allow it: commands then start
        where the provider starts them).

        Raises:
            ConfigError: the config is invalid.
            ProvisionError: the object's ``provision`` failed or returned no instance id.
        """
        cfg = ComputeConfig.coerce(config)
        self.check_supported(cfg)
        if cfg.ttl_s is not None:  # nothing of ours reaps these instances (see the module docstring)
            raise UnsupportedFeatureError(
                f"the {self.provider_name} provider object cannot honour ttl_s (its instances are its "
                "own to stop): remove it, or rely on its auto_shutdown and idle_timeout_s",
                op="provision",
            )
        info = await self._ask("provision", self.target.provision(ForeignConfig.of(cfg)), ProvisionError)
        theirs = instance_id_of(info)
        instance_id = str(theirs)
        if not usable_id(instance_id):
            raise ProvisionError(
                f"the {self.provider_name} provider's provision returned no usable instance_id "
                f"({theirs!r:.80})",
                op="provision",
            )
        self._theirs[instance_id], self._working_dirs[instance_id] = theirs, cfg.working_dir
        self._gone.discard(instance_id)
        make_dir = f"mkdir -p -- {_shell.quoted(cfg.working_dir)} 2>/dev/null || :"
        try:
            await self._call(instance_id, make_dir, _FILE_OP_TIMEOUT_S)
        except BaseException:  # the instance exists: it must not outlive a failed provision
            with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                await self.shutdown(instance_id)
            raise
        return InstanceInfo(
            instance_id, self.name, InstanceStatus.RUNNING, metadata={"provider": self.provider_name}
        )

    async def shutdown(self, instance_id: str) -> bool:
        """The object's ``shutdown``, once per instance: a second call returns ``False`` without
        calling it again. When it fails, the error says so and a later call tries again."""
        self._check_id(instance_id)
        if instance_id in self._gone:
            return False
        theirs = self._theirs.get(instance_id, instance_id)
        self._gone.add(instance_id)  # first: a concurrent second shutdown does not call theirs
        try:
            answer = await self._ask("shutdown", self.target.shutdown(theirs), ExecError)
        except BaseException:
            self._gone.discard(instance_id)
            raise
        self._theirs.pop(instance_id, None)
        self._working_dirs.pop(instance_id, None)
        _activity.release(instance_id)
        return answer is not False

    async def list_instances(self) -> list[InstanceInfo]:
        """The object's ``list_instances`` when it has one, else the instances made here."""
        return await self._list()

    def _check_id(self, instance_id: object) -> None:
        """An id is whatever the object's ``provision`` returned: any printable text."""
        if not isinstance(instance_id, str) or not usable_id(instance_id):
            raise InvalidInstanceIdError(
                f"{instance_id!r:.80} is not an instance id of the {self.provider_name} provider "
                "(ids are what its provision returned)",
                op="lookup",
            )

    # ---- the one call everything goes through ----------------------------------------------

    async def _call(self, instance_id: str, command: str, timeout: float | None) -> tuple[str, str, int]:
        """The object's ``execute`` (timeout passed positionally, as PraisonAI passes it):
        ``(stdout, stderr, exit_code)``. Its ``TimeoutError`` propagates."""
        if instance_id in self._gone:
            raise InstanceNotFoundError(
                f"instance {instance_id} of the {self.provider_name} provider was shut down"
            )
        theirs = self._theirs.get(instance_id, instance_id)
        return result_fields(
            await self._ask("execute", self.target.execute(theirs, command, timeout), ExecError)
        )

    async def _ask(self, method: str, call: Awaitable[_T], error: type[PraisonAIError]) -> _T:
        """Await one of the object's methods; what it raises becomes ``error`` naming the method
        (ours and ``TimeoutError`` pass as they are: the callers tell a timeout apart)."""
        try:
            return await call
        except (PraisonAIError, TimeoutError):
            raise
        except Exception as exc:
            said = str(exc) or type(exc).__name__
            raise error(f"the {self.provider_name} provider's {method} failed: {said}", op=method) from exc

    async def _exec(self, instance_id: str, request: ExecRequest) -> ExecResult:
        mark = f"PRAISONAI_NO_CWD_{secrets.token_hex(8).upper()}"
        cwd = None if request.cwd is None else self._path(instance_id, request.cwd)
        line = _shell.exec_line(
            request.command if cwd is not None else self._enter_working_dir(instance_id) + request.command,
            cwd=cwd,
            env=request.env,
            timeout=request.timeout,
            stdin=await stdin_bytes(request.stdin),  # a line of its shell carries the input
            missing_cwd_mark=mark,
        )
        # Ours kills at the deadline; theirs, a grace later, only where the instance lacks timeout(1).
        theirs = None if request.timeout is None else request.timeout + _limits.KILL_GRACE_S
        try:
            stdout, stderr, code = await self._call(instance_id, line, theirs)
        except TimeoutError:
            return exec_result(None, timed_out=True)
        if mark in stderr:
            raise PathNotFoundError(
                f"working directory {request.cwd} does not exist in {instance_id}", op="exec"
            )
        return exec_result_of(request, stdout, stderr, code)

    def _enter_working_dir(self, instance_id: str) -> str:
        """A command without a cwd starts in the working dir where it exists (PraisonAI's
        SharedCompute entered none: a provider that cannot make it keeps its own start dir)."""
        working_dir = self._working_dirs.get(instance_id)
        return "" if working_dir is None else f"cd -- {_shell.quoted(working_dir)} 2>/dev/null\n"

    # ---- files ---------------------------------------------------------------------------------

    async def read_text(self, instance_id: str, path: str) -> str:
        """The file as text, read by exactly ``cat 'PATH'`` (the read PraisonAI's tools make, and
        the one its fakes answer): what the agents' text tool uses. Bytes: :meth:`read_file`.

        Raises:
            PathNotFoundError: no such file. ExecError: the read failed otherwise.
        """
        self._check_id(instance_id)
        requests.check_instance_path(path, "read_file")
        target = self._path(instance_id, path)
        with _activity.in_use(instance_id):
            return await self._checked(instance_id, _shell.cat(target), "read", target)

    async def _read(self, instance_id: str, path: str) -> bytes:
        target = self._path(instance_id, path)
        checked = functools.partial(self._checked, instance_id, op="read", path=target)
        return await _files.read_bytes(checked, target, f"{path} in {instance_id}")

    async def _write(self, instance_id: str, path: str, data: bytes) -> None:
        target = self._path(instance_id, path)
        checked = functools.partial(self._checked, instance_id, op="write", path=target)
        await _files.write_bytes(checked, functools.partial(self._remove, instance_id), target, data)

    async def _remove(self, instance_id: str, path: str) -> None:
        await self._call(instance_id, _shell.remove(path), _FILE_OP_TIMEOUT_S)

    async def _upload(self, instance_id: str, local: Path, remote: str) -> None:
        if callable(getattr(self.target, "upload_file", None)):
            theirs = self._theirs.get(instance_id, instance_id)
            await self._ask("upload_file", self.target.upload_file(theirs, str(local), remote), ExecError)
            return
        target = self._path(instance_id, remote)
        if local.is_file():
            await self._write(instance_id, target, local.read_bytes())
            return
        parent, archive = posixpath.dirname(target), partial_beside(target)
        await self._write(instance_id, archive, _tar.pack_path(local, posixpath.basename(target)))
        unpack = f"tar -xf {_shell.quoted(archive)} -C {_shell.quoted(parent)}"
        unpack += f"; s=$?; {_shell.remove(archive)}; exit $s"  # the archive goes either way
        await self._checked(instance_id, unpack, "upload", target)

    async def _download(self, instance_id: str, remote: str, local: Path) -> None:
        if callable(getattr(self.target, "download_file", None)):
            theirs = self._theirs.get(instance_id, instance_id)
            await self._ask("download_file", self.target.download_file(theirs, remote, str(local)), ExecError)
            return
        target = self._path(instance_id, remote)
        archive = partial_beside(target)
        pack = (
            f"tar -cf {_shell.quoted(archive)} -C {_shell.quoted(posixpath.dirname(target))} "
            + _shell.quoted(posixpath.basename(target))
        )
        try:
            await self._checked(instance_id, pack, "download", target)
            data = await self._read(instance_id, archive)
        finally:
            with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                await self._remove(instance_id, archive)
        _tar.unpack_to([data], local, shown=remote)

    async def _checked(self, instance_id: str, command: str, op: str, path: str) -> str:
        """Run a file operation's command; its stdout, or the failure as our error."""
        try:
            stdout, stderr, code = await self._call(instance_id, command, _FILE_OP_TIMEOUT_S)
        except TimeoutError as exc:
            raise ExecError(f"{op} {path} in {instance_id} timed out", op=op) from exc
        if code == 0:
            return stdout
        why = (stderr or stdout).strip()[-500:] or f"exit {code}"
        if "No such file" in why:
            raise PathNotFoundError(f"{op} {path} in {instance_id}: {why}", op=op)
        if "Is a directory" in why:
            raise IsADirectoryError(f"{op} {path} in {instance_id}: {why}")
        raise ExecError(f"{op} {path} in {instance_id} failed: {why}", op=op)

    def _path(self, instance_id: str, path: str) -> str:
        return _shell.absolute(path, self._working_dirs.get(instance_id, "/workspace"))

    # ---- state ---------------------------------------------------------------------------------

    async def _status(self, instance_id: str) -> InstanceInfo:
        if instance_id in self._gone:
            raise InstanceNotFoundError(
                f"instance {instance_id} of the {self.provider_name} provider was shut down"
            )
        if callable(getattr(self.target, "get_status", None)):
            theirs = self._theirs.get(instance_id, instance_id)
            answer = await self._ask("get_status", self.target.get_status(theirs), ExecError)
            return self._info(instance_id, getattr(answer, "status", answer))
        if instance_id not in self._theirs:
            raise InstanceNotFoundError(
                f"no instance {instance_id} of the {self.provider_name} provider here"
            )
        return self._info(instance_id, InstanceStatus.RUNNING)

    async def _list(self) -> list[InstanceInfo]:
        if callable(getattr(self.target, "list_instances", None)):
            found = await self._ask("list_instances", self.target.list_instances(), ExecError)
            return [
                self._info(str(instance_id_of(item)), getattr(item, "status", "running")) for item in found
            ]
        return [self._info(instance_id, InstanceStatus.RUNNING) for instance_id in self._theirs]

    async def _create(self, instance_id: str, cfg: ComputeConfig, labels: dict[str, str]) -> InstanceInfo:
        raise ProvisionError("a foreign provider provisions through provision() alone", op="provision")

    async def _destroy(self, instance_id: str) -> bool:
        return await self.shutdown(instance_id)

    def _info(self, instance_id: str, status: object) -> InstanceInfo:
        return InstanceInfo(
            instance_id, self.name, status_of(status), metadata={"provider": self.provider_name}
        )
