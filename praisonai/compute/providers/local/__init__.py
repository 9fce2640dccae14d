"""Local compute: an instance is a workspace directory on this machine.

Commands run with a clean environment (the config's env plus a minimal ``PATH``/``HOME``; no host
secrets) in their own process group, so a timeout kills the whole tree. Every process carries
``PRAISONAI_INSTANCE=<id>`` in its environment, so shutdown finds and kills also those that left
the group (``setsid``, daemons). With ``isolate=True`` every command runs under bubblewrap: the
system is read-only, only the workspace is writable, the rest of the host (home directories, keys,
``/etc/shadow``) is absent, and ``network="none"`` takes the network away. Without isolation this
is a plain shell on this machine, not a security boundary.

On disk (``$PRAISONAI_HOME/local/<instance-id>/``): ``instance.json`` (mode 0600),
``workspace/`` and ``pgids/`` — one empty file per running process group, so a shutdown from any
process can kill what runs.

A command or session still running when its client process dies (SIGKILL included) dies with it
(``runtime.owner``); background processes (``start``) live on. An instance whose creating process
died is shut down by the home's reaper process (``_home_reaper``) once its ``Lifetime`` says so
(idle too long, or past its ttl).
"""

from __future__ import annotations

import dataclasses
import json
import os
import posixpath
import shlex
import shutil
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Literal

import anyio
from pydantic import field_validator

from praisonai._errors import (
    InstanceNotFoundError,
    PathOutsideWorkspaceError,
    ProviderUnavailableError,
)
from praisonai._home import home_path, praisonai_home
from praisonai._types import Capability, ExecRequest, ExecResult, InstanceInfo
from praisonai.compute import _home_reaper
from praisonai.compute.base import SYSTEM_PATH, ComputeProvider
from praisonai.compute.channel import CHANNEL_CAPABILITIES, ChannelMixin
from praisonai.compute.config import ComputeConfig
from praisonai.compute.options import ProviderOptions
from praisonai.compute.providers.local import _files
from praisonai.compute.providers.local._beneath import relative_parts
from praisonai.compute.providers.local._bwrap import ISOLATED_SPOOL, SandboxedProcessTransport, bwrap_argv
from praisonai.compute.providers.local._bwrap_probe import bwrap_problem
from praisonai.compute.providers.local._process import INSTANCE_MARKER, kill_group, kill_marked, run_process
from praisonai.compute.providers.local._pty import HostPty
from praisonai.compute.providers.local._record import Instance, save
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
    capabilities = CHANNEL_CAPABILITIES | {Capability.PTY}
    options_model = LocalOptions

    def __init__(self, *, isolate: bool = False, root: str | os.PathLike[str] | None = None) -> None:
        self._options = LocalOptions.parse({"isolate": isolate, "root": root})
        self.isolate = self._options.isolate
        self._root = self._options.root
        self._known: dict[str, Instance] = {}
        if self.isolate:
            self.capabilities = CHANNEL_CAPABILITIES | {
                Capability.PTY,
                Capability.ISOLATION,
                Capability.NETWORK_NONE,
            }

    @property
    def options(self) -> LocalOptions:
        return self._options

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
        if cfg.lifetime.reaps:  # someone must stop it if this process dies
            await anyio.to_thread.run_sync(_home_reaper.ensure_running)
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
        for entry in (root / "pgids").glob("*"):
            kill_group(int(entry.name))
        await anyio.to_thread.run_sync(kill_marked, instance_id)  # those that left their group
        await anyio.to_thread.run_sync(shutil.rmtree, root, True)
        return True

    async def _status(self, instance_id: str) -> InstanceInfo:
        return self._load(instance_id).info()

    async def _list(self) -> list[InstanceInfo]:
        if not self.root.is_dir():
            return []
        found = []
        for meta in sorted(self.root.glob("*/instance.json")):
            try:
                found.append(self._load(meta.parent.name).info())
            except InstanceNotFoundError:  # removed while we looked
                continue
        return found

    def _load(self, instance_id: str) -> Instance:
        if instance_id in self._known:
            return self._known[instance_id]
        root = self.root / instance_id
        try:
            data = json.loads((root / "instance.json").read_text())
        except (FileNotFoundError, NotADirectoryError, json.JSONDecodeError):
            raise InstanceNotFoundError(f"no local instance {instance_id!r}", op="lookup") from None
        inst = Instance(root=root, **data)
        self._known[instance_id] = inst
        return inst

    # ---- exec ------------------------------------------------------------------------------

    async def _exec(self, instance_id: str, request: ExecRequest) -> ExecResult:
        inst = self._load(instance_id)
        cwd = self._checked_cwd(inst, request.cwd)
        # The runner gets the host's view: the directory on the host, the process's whole environment.
        env = {**_base_env(inst), **request.env, INSTANCE_MARKER: inst.instance_id}
        on_host = dataclasses.replace(request, cwd=str(cwd), env=env)
        with _command_file(inst, request.command) as script:
            if script is None:
                shell = ["/bin/sh", "-c", "--", request.command]  # "--": a command may start with "-"
                binds: list[str] = []
            else:  # too long for one argv string: the shell reads it from a file (see _command_file)
                seen = f"{_ISOLATED_COMMANDS}/{script.name}" if inst.isolate else str(script)
                shell = ["/bin/sh", "-c", f". {shlex.quote(seen)}"]
                binds = ["--ro-bind", str(script), seen]
            if inst.isolate:
                shell = [*_bwrap_argv(inst, self._inner_path(inst, cwd)), *binds, *shell]
            pgids = inst.root / "pgids"
            return await run_process(
                shell,
                on_host,
                on_start=lambda pid: (pgids / str(pid)).touch(),
                on_end=lambda pid: _forget_if_empty(pgids / str(pid)),
            )

    async def _open_pty(
        self,
        instance_id: str,
        command: list[str] | None,
        cols: int,
        rows: int,
        cwd: str | None,
        env: Mapping[str, str],
    ) -> HostPty:
        inst = self._load(instance_id)
        host_cwd = self._checked_cwd(inst, cwd)
        argv = command or ["/bin/sh", "-c", 'exec "$(command -v bash || echo /bin/sh)" -i']
        if inst.isolate:  # no new session: the pty must stay bubblewrap's controlling terminal
            argv = [*_bwrap_argv(inst, self._inner_path(inst, host_cwd), new_session=False), *argv]
        full_env = {"TERM": "xterm", **_base_env(inst), **env, INSTANCE_MARKER: inst.instance_id}
        pgids = inst.root / "pgids"
        return HostPty(
            argv,
            cwd=str(host_cwd),
            env=full_env,
            cols=cols,
            rows=rows,
            on_start=lambda pid: (pgids / str(pid)).touch(),
            on_end=lambda pid: _forget_if_empty(pgids / str(pid)),
        )

    # ---- the exec channel (background processes and sessions) ------------------------------

    def _session_transport(self, instance_id: str, argv: list[str]) -> ProcessTransport:
        # a session's commands die with this process; the helper's background processes do not
        return self._process(instance_id, argv, die_with_owner=True)

    def _transport(self, instance_id: str, argv: list[str]) -> ProcessTransport:
        return self._process(instance_id, argv, die_with_owner=False)

    def _process(self, instance_id: str, argv: list[str], *, die_with_owner: bool) -> ProcessTransport:
        """The channel's process in the instance (under bubblewrap when it isolates), its group
        recorded so that shutdown kills it."""
        inst = self._load(instance_id)
        if inst.isolate:  # no --new-session: the transport is a session already, with no tty
            argv = [*_bwrap_argv(inst, inst.working_dir, new_session=False), *argv]
        kind = SandboxedProcessTransport if inst.isolate else ProcessTransport
        transport = kind(argv, env=_base_env(inst), cwd=str(inst.workspace), die_with_owner=die_with_owner)
        (inst.root / "pgids" / str(transport.process.pid)).touch()  # shutdown kills its group
        return transport

    async def bind_env(self, instance_id: str, env: Mapping[str, str]) -> None:
        # Commands here are direct spawns, not the helper's jobs: they read the env from the record.
        self._check_id(instance_id)  # before the record is read and rewritten
        inst = self._load(instance_id)
        bound = dataclasses.replace(inst, env={**inst.env, **env})
        await anyio.to_thread.run_sync(save, bound)
        self._known[instance_id] = bound
        await super().bind_env(instance_id, env)

    async def _channel_cwd(self, instance_id: str, cwd: str | None) -> str:
        inst = self._load(instance_id)
        host = self._checked_cwd(inst, cwd)
        return self._inner_path(inst, host) if inst.isolate else str(host)

    def _spool(self, instance_id: str) -> str:
        inst = self._load(instance_id)
        return ISOLATED_SPOOL if inst.isolate else str(inst.root / "spool")

    # ---- files -----------------------------------------------------------------------------

    async def _read(self, instance_id: str, path: str) -> bytes:
        inst = self._load(instance_id)
        return await anyio.to_thread.run_sync(
            _files.read_bytes, inst.workspace, self._parts(inst, path), path
        )

    async def _write(self, instance_id: str, path: str, data: bytes) -> None:
        inst = self._load(instance_id)
        await anyio.to_thread.run_sync(
            _files.write_bytes, inst.workspace, self._parts(inst, path), data, path
        )

    async def _upload(self, instance_id: str, local: Path, remote: str) -> None:
        inst = self._load(instance_id)
        await anyio.to_thread.run_sync(
            _files.upload, local, inst.workspace, self._parts(inst, remote), remote
        )

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


#: Longest command passed to ``sh -c`` as one argv string; Linux refuses any single argument over
#: 128 KiB (MAX_ARG_STRLEN) with "Argument list too long".
ARGV_COMMAND_LIMIT = 64 * 1024
#: Where an isolated instance sees a longer command's file (a read-only bind of that one file).
_ISOLATED_COMMANDS = "/tmp/.praisonai-commands"


@contextmanager
def _command_file(inst: Instance, command: str) -> Iterator[Path | None]:
    """``None`` when ``command`` fits in argv; else a private file holding it, removed after.

    The shell sources it (``. FILE``), so ``$0``, ``$@`` and ``exit`` mean what they mean in
    ``sh -c COMMAND``: any length runs, as it does on docker and SSH, where commands travel over
    the helper's channel rather than argv.
    """
    data = command.encode()
    if len(data) <= ARGV_COMMAND_LIMIT:
        yield None
        return
    folder = inst.root / "commands"  # private to the instance, removed with it
    folder.mkdir(mode=0o700, exist_ok=True)
    path = folder / f"{uuid.uuid4().hex}.sh"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data + b"\n")
        yield path
    finally:
        path.unlink(missing_ok=True)


def _base_env(inst: Instance) -> dict[str, str]:
    """A clean environment: the instance's env over a minimal PATH/HOME/LANG, no host secrets,
    and the instance's marker (last: the config's env cannot take it away)."""
    home = inst.working_dir or str(inst.workspace)
    base = {"PATH": SYSTEM_PATH, "HOME": home, "LANG": "C.UTF-8"}
    return {**base, **inst.env, INSTANCE_MARKER: inst.instance_id}


def _forget_if_empty(record: Path) -> None:
    """Drop a process group's record once nothing runs in it; a backgrounded child keeps it,
    so that shutdown still finds and kills it."""
    try:
        os.killpg(int(record.name), 0)
    except (ProcessLookupError, PermissionError):
        record.unlink(missing_ok=True)


def _bwrap_argv(inst: Instance, cwd: str, *, new_session: bool = True) -> list[str]:
    """bubblewrap's argv for a command of the isolated instance ``inst`` started in ``cwd``."""
    return bwrap_argv(
        root=inst.root,
        workspace=inst.workspace,
        working_dir=inst.working_dir,
        network=inst.network,
        cwd=cwd,
        new_session=new_session,
        hidden=(home_path(), inst.root.parent),  # every instance's record and workspace
    )
