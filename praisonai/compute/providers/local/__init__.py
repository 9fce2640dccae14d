"""Local compute: an instance is a workspace directory on this machine.

Commands run with a clean environment (the config's env plus a minimal ``PATH``/``HOME``; no host
secrets) in their own process group, so a timeout kills the whole tree. Every process carries
``PRAISONAI_INSTANCE=<id>`` in its environment, so shutdown finds and kills also those that left
the group (``setsid``, daemons). With ``isolate=True`` every command runs under bubblewrap: the
system is read-only, only the workspace is writable, the rest of the host (home directories, keys,
``/etc/shadow``) is absent, and ``network="none"`` takes the network away. Each exec, terminal,
session and background process gets a sandbox of its own (its own pid namespace, no capability,
also when this process is root), and what frames the results stays outside all of them: this
process for exec, files and terminals, and the exec helper, on the host, for background
processes (it starts each through ``_launch.sandbox_launcher``; its spool is in no sandbox). So
no command can see, signal, trace or write into what frames another call's results. A session's
framing shares its own sandbox with that session's commands. Without isolation this is a plain
shell on this machine, not a security boundary: commands run as you beside the helper, and one
can write into its pipes or read its memory.

On disk (``$PRAISONAI_HOME/local/<instance-id>/``): ``instance.json`` (mode 0600),
``workspace/`` and ``pgids/`` — one empty file per running process group, so a shutdown from any
process can kill what runs. A pause (``idle_action: pause``) kills them too and keeps the
workspace (``_pause``); the next call resumes the instance.

Commands, sessions and terminals are started by the client process's keeper (``runtime.owner``):
when the client dies (SIGKILL included) everything they started dies with it, however detached
(``setsid``, a double fork, a cleared environment); background processes (``start``) live on.
An instance whose creating process died is shut down by the home's reaper process
(``_home_reaper``) once its ``Lifetime`` says so (idle too long, or past its ttl).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import posixpath
import shlex
import shutil
import time
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath
from typing import Literal

import anyio
from pydantic import field_validator

from praisonai._errors import (
    InstanceNotFoundError,
    PathOutsideWorkspaceError,
    ProviderUnavailableError,
)
from praisonai._home import praisonai_home
from praisonai._types import Capability, ExecRequest, ExecResult, InstanceInfo
from praisonai.compute.abilities import part
from praisonai.compute.base import ComputeProvider
from praisonai.compute.channel import ChannelMixin
from praisonai.compute.config import ComputeConfig
from praisonai.compute.options import ProviderOptions
from praisonai.compute.providers.local import _archive, _fileops, _files, _pause
from praisonai.compute.providers.local._beneath import relative_parts
from praisonai.compute.providers.local._bound_env import LocalProcesses
from praisonai.compute.providers.local._bwrap_probe import bwrap_problem
from praisonai.compute.providers.local._launch import base_env, command_file, forget_if_empty, isolated_argv
from praisonai.compute.providers.local._ports import HostPorts
from praisonai.compute.providers.local._process import INSTANCE_MARKER, run_process
from praisonai.compute.providers.local._pty import LocalTerminals
from praisonai.compute.providers.local._record import Instance, save
from praisonai.compute.providers.local._snapshot import LocalSnapshotter
from praisonai.compute.providers.local._transports import helper_transport, session_transport
from praisonai.runtime import owner
from praisonai.runtime.channel import Channel
from praisonai.runtime.transport import ProcessTransport


class LocalOptions(ProviderOptions):
    """``LocalCompute``'s options. ``root`` is made absolute (another process may run elsewhere);
    without it instances live under the process's own ``$PRAISONAI_HOME/local``, next to the
    ledger that records them."""

    type: Literal["local"] = "local"
    isolate: bool = False
    root: Path | None = None

    @field_validator("root", mode="before")
    @classmethod
    def _any_path_like(cls, root: object) -> object:
        return os.fspath(root) if isinstance(root, os.PathLike) else root

    @field_validator("root")
    @classmethod
    def _absolute(cls, root: Path | None) -> Path | None:
        return root.absolute() if root is not None else None


class LocalCompute(ChannelMixin, ComputeProvider):
    """Instances are directories under ``$PRAISONAI_HOME/local``; see the module docstring."""

    name = "local"
    options_model = LocalOptions

    def __init__(self, *, isolate: bool = False, root: str | os.PathLike[str] | None = None) -> None:
        self._options = LocalOptions.parse({"isolate": isolate, "root": root})
        self.isolate = self._options.isolate
        self._root = self._options.root
        self._known: dict[str, Instance] = {}
        if self.isolate:  # what the class has (its parts' too), and the sandbox's own
            self.capabilities = type(self).capabilities | {Capability.ISOLATION, Capability.NETWORK_NONE}

    @property
    def options(self) -> LocalOptions:
        return self._options

    @part(Capability.PORTS)
    def forwarder(self) -> HostPorts:
        """The instance's ports are this host's own (``_ports``)."""
        return HostPorts(lambda instance_id: self._load(instance_id).network)

    @property
    def flavour(self) -> str:
        """How its instances are contained, as ``registry.shown_name`` shows it."""
        return "bubblewrap" if self.isolate else ""

    def unavailable_reason(self) -> str | None:
        return bwrap_problem() if self.isolate else None

    @property
    def root(self) -> Path:
        return self._root or praisonai_home() / "local"

    # ---- lifecycle -------------------------------------------------------------------------

    async def _create(self, instance_id: str, cfg: ComputeConfig, labels: dict[str, str]) -> InstanceInfo:
        reason = self.unavailable_reason()
        if reason:
            raise ProviderUnavailableError(reason, op="provision")
        owner.start()  # it starts the commands: up while the instance is made, not on the first call
        inst = Instance(
            instance_id=instance_id,
            root=self.root / instance_id,
            working_dir=cfg.working_dir if self.isolate else "",
            env=dict(cfg.env),
            isolate=self.isolate,
            network="none" if cfg.network == "none" else "unrestricted",  # an allowlist is refused earlier
            created_at=time.time(),
            labels=labels,
        )
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        inst.root.mkdir(mode=0o700)  # its record holds env values: for this user only
        inst.workspace.mkdir()
        (inst.root / "pgids").mkdir()
        (inst.root / "spool").mkdir(mode=0o700)
        save(inst)
        self._known[instance_id] = inst
        return inst.info()

    async def _destroy(self, instance_id: str) -> bool:
        self._known.pop(instance_id, None)
        self._channels.drop(instance_id)
        root = self.root / instance_id
        if not root.is_dir():
            return False
        await _pause.end_processes(root, instance_id)
        await anyio.to_thread.run_sync(shutil.rmtree, root, True)
        return True

    async def _status(self, instance_id: str) -> InstanceInfo:
        inst = self._load(instance_id)
        return inst.info(paused=_pause.is_paused(inst.root))

    @part(Capability.PAUSE)
    def pauser(self) -> _pause.LocalPauser:
        return _pause.LocalPauser(self._load, self._channels)

    @part(Capability.SNAPSHOT)
    def snapshotter(self) -> LocalSnapshotter:
        """Snapshots are reflinked copies of the workspace (``_snapshot``)."""
        return LocalSnapshotter(self._load, self._create, self._channels)

    async def _awake(self, instance_id: str) -> Instance:
        """The instance, resumed first when paused: any call resumes it (the ledger says so too)."""
        inst = self._load(instance_id)
        if _pause.is_paused(inst.root):
            await self.resume(instance_id)
        return inst

    async def _list(self) -> list[InstanceInfo]:
        if not self.root.is_dir():
            return []
        found = []
        for meta in sorted(self.root.glob("*/instance.json")):
            try:
                found.append(await self._status(meta.parent.name))
            except InstanceNotFoundError:  # removed while we looked
                continue
        return found

    @functools.cached_property
    def file_tree(self) -> _fileops.NativeFiles:
        """Files through fds beneath the workspace on this host (``_fileops``), not the script."""
        return _fileops.NativeFiles(self._load, self._parts)

    def _load(self, instance_id: str) -> Instance:
        root = self.root / instance_id
        known = self._known.get(instance_id)
        if known is not None and root.is_dir():  # another process may have removed it since
            return known
        self._known.pop(instance_id, None)
        try:
            data = json.loads((root / "instance.json").read_text())
        except (FileNotFoundError, NotADirectoryError, json.JSONDecodeError):
            raise InstanceNotFoundError(f"no local instance {instance_id!r}", op="lookup") from None
        inst = Instance(root=root, **data)
        self._known[instance_id] = inst
        return inst

    # ---- exec ------------------------------------------------------------------------------

    async def _exec(self, instance_id: str, request: ExecRequest) -> ExecResult:
        inst = await self._awake(instance_id)
        cwd = self._checked_cwd(inst, request.cwd)
        # The runner gets the host's view: the directory on the host, the process's whole environment.
        env = {**base_env(inst), **request.env, INSTANCE_MARKER: inst.instance_id}
        on_host = dataclasses.replace(request, cwd=str(cwd), env=env)
        with command_file(inst, request.command) as script:
            if script is None:
                shell = ["/bin/sh", "-c", "--", request.command]  # "--": a command may start with "-"
                binds: list[str] = []
            else:  # too long for one argv string: the shell reads it from a file (see _launch.command_file)
                seen = f"{_ISOLATED_COMMANDS}/{script.name}" if inst.isolate else str(script)
                shell = ["/bin/sh", "-c", f". {shlex.quote(seen)}"]
                binds = ["--ro-bind", str(script), seen]
            if inst.isolate:
                shell = [*isolated_argv(inst, self._inner_path(inst, cwd)), *binds, *shell]
            pgids = inst.root / "pgids"
            return await run_process(
                shell,
                on_host,
                on_start=lambda pid: (pgids / str(pid)).touch(),
                on_end=lambda pid: forget_if_empty(pgids / str(pid)),
            )

    @part(Capability.PTY)
    def terminals(self) -> LocalTerminals:
        return LocalTerminals(awake=self._awake, checked_cwd=self._checked_cwd, inner_path=self._inner_path)

    # ---- the exec channel (background processes and sessions) ------------------------------

    async def _open_channel(self, instance_id: str) -> Channel:
        await self._awake(instance_id)
        return await super()._open_channel(instance_id)

    def _session_transport(self, instance_id: str, argv: list[str]) -> ProcessTransport:
        return self._started(instance_id, session_transport, argv)

    def _transport(self, instance_id: str, argv: list[str]) -> ProcessTransport:
        return self._started(instance_id, helper_transport, argv)

    def _started(
        self, instance_id: str, start: Callable[[Instance, list[str]], ProcessTransport], argv: list[str]
    ) -> ProcessTransport:
        """``start``'s process (``_transports``), its group recorded so that shutdown kills it."""
        inst = self._load(instance_id)
        try:
            return start(inst, argv)
        except FileNotFoundError:  # removed by another process just now
            self._load(instance_id)  # InstanceNotFoundError when it is gone
            raise

    @part(Capability.PROCESSES)
    def process_table(self) -> LocalProcesses:
        """The channel's, recording bound env for the direct spawns too (``_bound_env``)."""
        return LocalProcesses(self._channels, self._channel_cwd, self._record_env)

    async def _record_env(self, instance_id: str, env: Mapping[str, str]) -> None:
        """Add ``env`` to the instance's record, where its commands (direct spawns, not the
        helper's jobs) read their env from."""
        inst = self._load(instance_id)
        bound = dataclasses.replace(inst, env={**inst.env, **env})
        await anyio.to_thread.run_sync(save, bound)
        self._known[instance_id] = bound

    async def _channel_cwd(self, instance_id: str, cwd: str | None) -> str:
        inst = self._load(instance_id)
        host = self._checked_cwd(inst, cwd)
        return self._inner_path(inst, host) if inst.isolate else str(host)

    async def _session_places(self, instance_id: str, cwd: str | None) -> tuple[str, str]:
        # No env file for an isolated session's shell, which sees no spool: its environment holds
        # the bound env already (bind_env records it, as for exec).
        inst = self._load(instance_id)
        if not inst.isolate:
            return await super()._session_places(instance_id, cwd)
        return await self._channel_cwd(instance_id, cwd), ""

    def _spool(self, instance_id: str) -> str:
        return str(self._load(instance_id).root / "spool")  # the helper's, on the host: in no sandbox

    # ---- files -----------------------------------------------------------------------------

    async def _read(self, instance_id: str, path: str) -> bytes:
        inst = self._load(instance_id)
        return await anyio.to_thread.run_sync(
            _files.read_bytes, inst.workspace, self._parts(inst, path), path
        )

    async def _write(self, instance_id: str, path: str, data: bytes) -> None:
        inst = self._load(instance_id)
        with _files.space_said(inst.workspace, path):
            parts = self._parts(inst, path)
            await anyio.to_thread.run_sync(_files.write_bytes, inst.workspace, parts, data, path)

    async def _upload(self, instance_id: str, local: Path, remote: str) -> None:
        inst = self._load(instance_id)
        with _files.space_said(inst.workspace, remote):
            parts = self._parts(inst, remote)
            await anyio.to_thread.run_sync(_files.upload, local, inst.workspace, parts, remote)

    async def _unpack_archive(self, instance_id: str, archive: Path, remote_dir: str) -> bool:
        inst = self._load(instance_id)
        parts = self._parts(inst, remote_dir)
        with _files.space_said(inst.workspace, remote_dir):
            await anyio.to_thread.run_sync(_archive.unpack, archive, inst.workspace, parts, remote_dir)
        return True

    async def _download(self, instance_id: str, remote: str, local: Path) -> None:
        inst = self._load(instance_id)
        await anyio.to_thread.run_sync(
            _files.download, inst.workspace, self._parts(inst, remote), local, remote
        )

    def _checked_cwd(self, inst: Instance, cwd: str | None) -> Path:
        """The host directory for a command's ``cwd``, checked beneath the workspace without
        following a link. The path is handed to the process by name: under bubblewrap its chdir
        happens inside the sandbox, which sees nothing else of the host; without bubblewrap the
        command could ``cd`` anywhere itself. Inline, not in a worker thread: a few local
        syscalls cost less than the hop (every exec pays it)."""
        parts = self._parts(inst, cwd or ".")
        _files.check_dir(inst.workspace, parts, cwd or ".")
        return inst.workspace.joinpath(*parts)

    def _parts(self, inst: Instance, path: str) -> list[str]:
        """An instance path as components beneath the workspace; anything outside is refused.

        Relative paths start at the workspace; absolute ones under the instance's working dir
        (``/workspace/...`` by default) are translated, so the same path works on every provider.
        Nothing is resolved here: ``_files`` opens the components without following a link.
        """
        wanted = posixpath.normpath(path) if path else "."
        for root in (posixpath.normpath(inst.working_dir or "/workspace"), str(inst.workspace)):
            if wanted == root or wanted.startswith(root.rstrip("/") + "/"):  # also the host's own path
                wanted = posixpath.relpath(wanted, root)
                break
        if wanted.startswith("/"):
            raise PathOutsideWorkspaceError(f"{path} is outside the instance workspace", op="path")
        return relative_parts(wanted, path)

    def _inner_path(self, inst: Instance, host: Path) -> str:
        return str(PurePosixPath(inst.working_dir) / host.relative_to(inst.workspace))


#: Where an isolated instance sees a longer command's file (a read-only bind of that one file).
_ISOLATED_COMMANDS = "/tmp/.praisonai-commands"
