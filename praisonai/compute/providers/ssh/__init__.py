"""SSH compute: an instance is a workspace directory on a host you can SSH into.

On the host (``root`` defaults to ``~/.praisonai/instances``)::

    <root>/<instance-id>/                  the workspace: commands start here
    <root>/.praisonai/<instance-id>/       instance.json, env (mode 0600), the helper's spool
    <root>/.praisonai/snapshots/           the snapshots' archives (``_snapshot``)

Everything is found again from those files, so any process with the same host settings lists,
reaches, pauses (``_pause``), snapshots and shuts down an instance. Commands (and whole-file reads)
run through the exec channel's helper with a clean environment (a minimal PATH, HOME set to the
workspace, the instance's env read from its 0600 file, never from a command line); every process
carries ``PRAISONAI_INSTANCE=<id>``, so shutdown kills all of them, detached ones included. Writes,
uploads and downloads travel over reused SFTP sessions. The host is not a sandbox: commands run as
the login user. File operations are confined to the workspace by path (symbolic links
the commands create are not resolved).

An instance whose creating process died is shut down by the home's reaper process
(``_home_reaper``) once its ``Lifetime`` says so (idle too long, or past its ttl). A host that falls
silent is noticed within ``keepalive_s x (keepalive_count + 1)`` seconds (``SSHHost``).
"""

from __future__ import annotations

import contextlib
import functools
import posixpath
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import anyio
from pydantic import ValidationError

from praisonai._errors import (
    ChannelClosedError,
    ConfigError,
    ExecError,
    InstanceNotFoundError,
    PathOutsideWorkspaceError,
    ProviderUnavailableError,
)
from praisonai._types import Capability, InstanceInfo, InstanceStatus
from praisonai.compute._threads import run_blocking
from praisonai.compute.abilities import part
from praisonai.compute.base import SYSTEM_PATH, ComputeProvider
from praisonai.compute.channel import ChannelMixin
from praisonai.compute.config import ComputeConfig
from praisonai.compute.files import ShellFiles
from praisonai.compute.lifecycle import LABEL_CREATED
from praisonai.compute.options import ProviderOptions, problems
from praisonai.compute.providers.ssh import _files, _pause, _ports
from praisonai.compute.providers.ssh._connect import SSHHost
from praisonai.compute.providers.ssh._hosts import check_shell, link_for, parse_hosts
from praisonai.compute.providers.ssh._link import HostLink, SSHChannelTransport
from praisonai.compute.providers.ssh._pty import SSHTerminals
from praisonai.compute.providers.ssh._snapshot import SSHSnapshotter
from praisonai.compute.watchdog import guarded_session
from praisonai.runtime.channel import Channel

_NO_HOSTS = "no SSH hosts configured: pass SSHCompute(host=...) or set PRAISONAI_SSH_HOSTS=user@host[:port]"
# Starts a channel program (helper or session shell) with the instance's clean environment:
# $0 is the env file (sourced with every name exported), "$@" the program.
_WITH_ENV = 'set -a && . "$0" && set +a && exec "$@"'


@dataclass(frozen=True, slots=True)
class _Place:
    """Where an instance lives, and what its instance.json says."""

    instance_id: str
    link: HostLink
    workspace: str  # absolute, on the host
    meta: str  # absolute, on the host
    working_dir: str  # the path users write for the workspace ("/workspace")
    created_at: float
    labels: dict[str, str]

    def info(self, *, paused: bool = False) -> InstanceInfo:
        return InstanceInfo(
            instance_id=self.instance_id,
            provider="ssh",
            status=InstanceStatus.PAUSED if paused else InstanceStatus.RUNNING,
            endpoint=f"ssh://{self.link.host.label}{self.workspace}",
            created_at=self.created_at,
            labels=self.labels,
            metadata={"host": self.link.host.label, "workspace": self.workspace},
        )

    def clean_env(self) -> list[str]:
        """The ``NAME=value`` words every program of the instance starts with (``env -i``): a
        minimal PATH/HOME/LANG and the instance's marker, no host secrets."""
        return [
            f"PATH={SYSTEM_PATH}",
            f"HOME={self.workspace}",
            "LANG=C.UTF-8",
            f"PRAISONAI_INSTANCE={self.instance_id}",
        ]


class SSHOptions(ProviderOptions):
    """``SSHCompute``'s options: the hosts, resolved (``host=`` and ``PRAISONAI_SSH_*`` become
    entries here). Passwords and key passphrases are secrets: the ledger leaves them out, and a
    provider rebuilt from it must be given them again."""

    type: Literal["ssh"] = "ssh"
    hosts: tuple[SSHHost, ...] = ()


class SSHCompute(ChannelMixin, ComputeProvider):
    """Instances on one host or a pool of hosts (provision picks the one with fewest instances).

    ``SSHCompute(host="build1", user="ci", key_file="~/.ssh/ci", known_hosts="~/.ssh/known_hosts")``
    for one host; ``SSHCompute(hosts=[...])`` with ``SSHHost`` objects, dicts or
    ``"user@host:port"`` strings for a pool (keyword arguments then apply to every string). With
    no arguments, hosts come from ``PRAISONAI_SSH_HOSTS`` (comma-separated ``user@host:port``),
    with ``PRAISONAI_SSH_KEY`` and ``PRAISONAI_SSH_KNOWN_HOSTS``.
    """

    name = "ssh"
    options_model = SSHOptions
    requires = ("paramiko",)
    extra = "ssh"

    def __init__(
        self,
        host: str | None = None,
        *,
        hosts: Sequence[SSHHost | Mapping[str, Any] | str] | None = None,
        **settings: Any,
    ) -> None:
        try:
            parsed = parse_hosts(host, hosts, settings)
        except ValidationError as exc:
            raise ConfigError(f"invalid SSH host settings: {problems(exc)}", op="config") from None
        self._options = SSHOptions(hosts=tuple(parsed))
        self.hosts = list(self._options.hosts)
        self._places: dict[str, _Place] = {}

    @property
    def options(self) -> SSHOptions:
        return self._options

    @part(Capability.PORTS)
    def forwarder(self) -> _ports.SshForwarder:
        """A forward on 127.0.0.1 here to ``127.0.0.1:port`` on the instance's host (``_ports``)."""

        async def link_of(instance_id: str) -> HostLink:
            return (await self._place(instance_id)).link

        return _ports.SshForwarder(link_of)

    def unavailable_reason(self) -> str | None:
        if not self.hosts:
            return _NO_HOSTS
        try:
            for host in self.hosts:
                link_for(host).transports()
        except (ProviderUnavailableError, ConfigError, PermissionError, ConnectionError) as exc:
            return str(exc)
        return None

    # ---- lifecycle -------------------------------------------------------------------------

    async def _create(
        self, instance_id: str, cfg: ComputeConfig, labels: dict[str, str], link: HostLink | None = None
    ) -> InstanceInfo:
        """A new empty instance on ``link`` (a snapshot's host), else on the least busy host."""
        if not self.hosts:
            raise ConfigError(_NO_HOSTS, op="provision")
        link = link or await self._least_busy()
        await run_blocking(check_shell, link)
        root = await run_blocking(_files.instances_root, link)
        place = _Place(
            instance_id=instance_id,
            link=link,
            workspace=f"{root}/{instance_id}",
            meta=f"{root}/{_files.META}/{instance_id}",
            working_dir=cfg.working_dir,
            created_at=float(labels[LABEL_CREATED]),
            labels=labels,
        )
        self._places[instance_id] = place
        record = {"working_dir": cfg.working_dir, "created_at": place.created_at, "labels": labels}
        await run_blocking(_files.create_instance, link, place.workspace, place.meta, cfg.env, record)
        try:  # the helper starts now: a host whose login shell cannot run it fails provision
            await self._channels.get(instance_id)
        except BaseException:
            with anyio.CancelScope(shield=True):
                self._channels.drop(instance_id)
                self._places.pop(instance_id, None)
                with contextlib.suppress(Exception):
                    await _pause.destroy(place)
            raise
        return place.info()

    async def _least_busy(self) -> HostLink:
        if len(self.hosts) == 1:
            return link_for(self.hosts[0])
        counts: list[tuple[int, int]] = []
        for index, host in enumerate(self.hosts):
            try:
                counts.append((len(await run_blocking(_files.instance_ids, link_for(host))), index))
            except ProviderUnavailableError:
                continue  # a host that is down takes no new instances
        if not counts:
            raise ProviderUnavailableError("no SSH host of the pool answers", op="provision")
        return link_for(self.hosts[min(counts)[1]])

    async def _destroy(self, instance_id: str) -> bool:
        self._channels.drop(instance_id)
        try:
            place = await self._place(instance_id)
        except InstanceNotFoundError:
            return False
        self._places.pop(instance_id, None)
        return await _pause.destroy(place)

    async def _status(self, instance_id: str) -> InstanceInfo:
        place = await self._place(instance_id)
        return place.info(paused=await _pause.is_paused(place))

    @part(Capability.PAUSE)
    def pauser(self) -> _pause.SSHPauser:
        return _pause.SSHPauser(self._place, self._channels)

    @part(Capability.SNAPSHOT)
    def snapshotter(self) -> SSHSnapshotter:
        """Snapshots are tar archives of the workspace kept on its host (``_snapshot``)."""
        links = tuple(link_for(host) for host in self.hosts)
        return SSHSnapshotter(self._place, self._create, links, self._channels)

    async def _awake(self, instance_id: str) -> _Place:
        """Where the instance lives, resumed first when paused: any call resumes it."""
        place = await self._place(instance_id)
        if await _pause.is_paused(place):
            await self.resume(instance_id)
        return place

    async def _list(self) -> list[InstanceInfo]:
        found = []
        for host in self.hosts:
            link = link_for(host)
            for instance_id in await run_blocking(_files.instance_ids, link):
                try:
                    await self._place(instance_id, link)
                    found.append(await self._status(instance_id))
                except InstanceNotFoundError:
                    continue  # removed while we looked
        return found

    async def _place(self, instance_id: str, link: HostLink | None = None) -> _Place:
        """Where the instance lives: remembered, or read from its host (the one given, or each)."""
        if instance_id in self._places:
            return self._places[instance_id]
        if not _files.is_instance_id(instance_id):
            raise InstanceNotFoundError(f"no ssh instance {instance_id!r}", op="lookup")
        for candidate in [link] if link else [link_for(h) for h in self.hosts]:
            root = await run_blocking(_files.instances_root, candidate)
            meta = f"{root}/{_files.META}/{instance_id}"
            record = await run_blocking(_files.read_record, candidate, meta)
            if record is not None:
                place = _Place(
                    instance_id=instance_id,
                    link=candidate,
                    workspace=f"{root}/{instance_id}",
                    meta=meta,
                    working_dir=record.get("working_dir", "/workspace"),
                    created_at=float(record.get("created_at", 0)),
                    labels=dict(record.get("labels", {})),
                )
                self._places[instance_id] = place
                return place
        raise InstanceNotFoundError(f"no ssh instance {instance_id!r}", op="lookup")

    # ---- exec: through the instance's channel ----------------------------------------------

    async def _open_channel(self, instance_id: str) -> Channel:
        """The helper, started within the host's ``start_timeout`` (its login shell and rc files
        run first), or one sentence naming the login shell."""
        place = await self._awake(instance_id)  # known before the blocking _transport and _spool run
        link, timeout = place.link, place.link.host.start_timeout
        try:
            with anyio.fail_after(timeout):
                return await super()._open_channel(instance_id)
        except TimeoutError:
            shell = await run_blocking(link.login_shell)
            raise ProviderUnavailableError(
                f"the exec helper did not start on {link.host.label} within {timeout:g} s: the login "
                f"shell {shell} or its rc files (~/.bashrc, ~/.zshenv) wait for input or take that long; "
                "make them return at once when not interactive, or raise start_timeout",
                op="exec",
            ) from None
        except ChannelClosedError as exc:
            if exc.sent:
                raise
            shell = await run_blocking(link.login_shell)
            raise ChannelClosedError(  # not sent: the pool tries a new helper once more
                f"the exec helper did not start on {link.host.label} through the login shell {shell}: {exc}",
                op="exec",
                sent=False,
            ) from None

    async def _before_exec(self, instance_id: str) -> None:
        # the helper starts (or fails) before a command's timeout begins: see _open_channel
        with contextlib.suppress(ChannelClosedError):  # not sent: the pool tries again in _exec
            await self._channels.get(instance_id)

    def _transport(self, instance_id: str, argv: list[str]) -> SSHChannelTransport:
        place = self._places.get(instance_id)
        if place is None:
            raise InstanceNotFoundError(f"no ssh instance {instance_id!r}", op="exec")
        command = "exec " + shlex.join(
            ["env", "-i", *place.clean_env(), "sh", "-c", _WITH_ENV, f"{place.meta}/env", *argv]
        )
        channel = place.link.open_session()
        try:
            return SSHChannelTransport(channel, command)
        except Exception as exc:
            channel.close()
            raise ExecError(
                f"could not start the helper on {place.link.host.label}: {exc}", op="exec"
            ) from None

    @part(Capability.PTY)
    def terminals(self) -> SSHTerminals[_Place]:
        return SSHTerminals(self._awake, self._host_path)

    def _session_transport(self, instance_id: str, argv: list[str]) -> SSHChannelTransport:
        # the shell's process group dies when this client's connection does (see SESSION_GUARD)
        return self._transport(instance_id, guarded_session(self._spool(instance_id), argv))

    async def _channel_path(self, instance_id: str, path: str) -> str:
        # Whole-file reads go through the helper too (ChannelMixin._read), not SFTP: `cat` streams
        # a 10 MiB file in ~85 ms where paramiko's SFTP reads take ~125-150 ms.
        return self._host_path(await self._place(instance_id), path)

    @functools.cached_property
    def file_tree(self) -> ShellFiles:
        """The generic files part, kept beneath the workspace: a directory on the host."""
        return ShellFiles(self.execute, target=self._channel_path, root=self._workspace_of)

    async def _workspace_of(self, instance_id: str) -> str:
        return (await self._place(instance_id)).workspace

    def _spool(self, instance_id: str) -> str:
        return f"{self._places[instance_id].meta}/spool"  # _open_channel looked the instance up

    # ---- files: writes and trees over SFTP ---------------------------------------------------------------

    async def _write(self, instance_id: str, path: str, data: bytes) -> None:
        place = await self._place(instance_id)
        await run_blocking(
            _files.write, place.link, self._host_path(place, path), data, path, place.workspace
        )

    async def _upload(self, instance_id: str, local: Path, remote: str) -> None:
        place = await self._place(instance_id)
        await run_blocking(_files.upload, place.link, local, self._host_path(place, remote), place.workspace)

    async def _download(self, instance_id: str, remote: str, local: Path) -> None:
        place = await self._place(instance_id)
        await run_blocking(_files.download, place.link, self._host_path(place, remote), local, remote)

    @staticmethod
    def _host_path(place: _Place, path: str) -> str:
        """Map an instance path onto the host, refusing anything outside the workspace.

        Relative paths start at the workspace; absolute ones under the working dir
        (``/workspace/...``) are translated, so the same path works on every provider.
        """
        virtual = place.working_dir.rstrip("/") or "/"
        wanted = posixpath.normpath(path)
        if not posixpath.isabs(wanted):
            host = posixpath.normpath(posixpath.join(place.workspace, wanted))
        elif wanted == virtual or wanted.startswith(virtual + "/"):
            host = place.workspace + wanted[len(virtual) :]
        else:
            host = wanted
        if host != place.workspace and not host.startswith(place.workspace + "/"):
            raise PathOutsideWorkspaceError(f"{path} is outside the instance workspace", op="path")
        return host
