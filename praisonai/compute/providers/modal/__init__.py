"""Modal compute: an instance is a Modal Sandbox (V2), driven through the official SDK (``modal``
>= 1.6.4, async ``.aio`` calls).

- provision: ``Sandbox.create`` in the app ``app_name`` (``App.lookup(create_if_missing=True)``),
  named after the praisonai instance id (Modal keeps names unique per app, so a retried create
  makes one sandbox), tagged with the praisonai labels (``list``/``ps``/``stop`` from any process
  find it by tag); env goes in the create request, never on a command line; ``idle_timeout`` is
  the idle policy (renewed by Modal on exec activity) and ``timeout`` the absolute ttl.
- exec, background processes, shell sessions, ``bind_env``: the POSIX-sh helper channel
  (``ChannelMixin``) over one long-lived ``sb.exec(..., text=False)`` per instance
  (``_transport``): a command costs one vendor call (its request on the helper's stdin) against
  five for a native exec, measured through the wire fake; no 64 KiB argument cap. Modal counts a
  running exec as activity, so an unused channel closes after half the idle timeout (``_linger``),
  a process exiting with channels open sends their EOF, and a helper orphaned by a killed client
  ends itself after 10 idle minutes. An open shell session is an exec too: it keeps the sandbox
  active until it is closed.
- files: whole-file reads and writes through the channel too (1 and 2 vendor calls, against 4
  and 3 through ``sb.filesystem``, which runs an exec of Modal's fs tool each time); directory
  trees as a tar stream through an exec (``_files``).
- captures: ``snapshot_filesystem`` images, found again by tag (``_capture``).
- snapshots: ``snapshot_filesystem`` images of a running sandbox, the bound env kept out; new
  sandboxes start from them; no restore in place (``_snapshot``).
- pause: a ``snapshot_filesystem`` image too, then the sandbox is terminated; the paused
  instance's record (image id, tags, env) is kept in a Modal ``Dict`` (``praisonai-paused``),
  where every process with the same credentials finds it while no sandbox exists (Modal lists
  only running ones); resume, or the next call, creates the sandbox again from it under the
  same name and tags (``_pause``, ``_paused``, ``_spec``). Processes and memory do not survive.
- ports: a port named in ``ComputeConfig.ports`` is opened at creation and ``expose`` gives its
  Modal tunnel (HTTPS); any other port goes through the exec relay (``_tunnels``).
Not offered (refused by capability): GPUs (they force the V1 backend, not yet tested), disk
limits, host mounts.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Any, Literal

import anyio

from praisonai._errors import ChannelClosedError, ConfigError, InstanceNotFoundError
from praisonai._types import Capability, ExecRequest, ExecResult, InstanceInfo, InstanceStatus
from praisonai.compute.abilities import part
from praisonai.compute.base import ComputeProvider
from praisonai.compute.channel import ChannelMixin
from praisonai.compute.config import ComputeConfig
from praisonai.compute.lifecycle import LABEL_INSTANCE
from praisonai.compute.options import ProviderOptions
from praisonai.compute.providers.modal import _files, _pty, _sdk, _spec, _transport, _tunnels
from praisonai.compute.providers.modal._capture import ModalCapturer
from praisonai.compute.providers.modal._linger import LingeringPool
from praisonai.compute.providers.modal._pause import ModalPauser, Sandboxes
from praisonai.compute.providers.modal._paused import PausedStore
from praisonai.compute.providers.modal._sdk import translated
from praisonai.compute.providers.modal._snapshot import ModalSnapshotter
from praisonai.compute.providers.modal._transport import ModalExecTransport
from praisonai.runtime.channel import Channel
from praisonai.runtime.pool import ChannelPool

#: an unused channel is closed after half the idle timeout, and at most after this
LINGER_MAX_S = 30.0


class ModalOptions(ProviderOptions):
    """``ModalCompute``'s options: the Modal app sandboxes live in, the default image, the
    Modal environment (``None``: the profile's)."""

    type: Literal["modal"] = "modal"
    app_name: str = "praisonai"
    image: str = "python:3.12-slim"
    environment: str | None = None


class ModalCompute(ChannelMixin, ComputeProvider):
    """Instances are Modal Sandboxes; see the module docstring."""

    name = "modal"
    capabilities = frozenset(
        {
            Capability.IMAGE,
            Capability.CPU_LIMIT,
            Capability.MEMORY_LIMIT,
            Capability.NETWORK_NONE,
            Capability.NETWORK_ALLOWLIST,
            Capability.SELF_STOP,  # Modal's idle_timeout and timeout, unless idleness pauses it
        }
    )
    requires = ("modal",)
    extra = "modal"
    options_model = ModalOptions

    def __init__(
        self, *, app_name: str = "praisonai", image: str | None = None, environment: str | None = None
    ) -> None:
        """``image``: the default image (else ``$PRAISONAI_MODAL_IMAGE``, else python:3.12-slim)."""
        image = image or os.environ.get("PRAISONAI_MODAL_IMAGE") or ModalOptions.model_fields["image"].default
        self._opts = ModalOptions(app_name=app_name, image=image, environment=environment)
        self._app: Any = None
        self._sandboxes: dict[str, Any] = {}
        self._workdirs: dict[str, str] = {}
        self._idle_timeout_s: dict[str, float] = {}
        self._ports: dict[str, frozenset[int]] = {}  # declared at creation: these have tunnels
        self._envs: dict[str, dict[str, str]] = {}  # made here or resumed here: a pause keeps it

    @property
    def options(self) -> ModalOptions:
        return self._opts

    def check_supported(self, cfg: ComputeConfig) -> None:
        """Also refuse ``ports`` under ``network='none'`` (Modal opens none there) and load the SDK,
        so that an unreadable Modal config is refused before anything is recorded or made
        (importing modal reads it)."""
        super().check_supported(cfg)
        if cfg.ports and cfg.network == "none":
            raise ConfigError(
                "Modal opens no port of a sandbox without network (network='none'): drop one or the other",
                op="provision",
            )
        _sdk.load()

    def unavailable_reason(self) -> str | None:
        if (missing := _sdk.credentials_reason()) is not None:
            return missing  # said without importing modal (200 ms): `ps` asks every provider
        try:
            _sdk.load()
        except (ImportError, ConfigError) as exc:  # not installed, or its config unreadable
            return str(exc)
        return None

    # ---- the app and finding sandboxes again ---------------------------------------------------

    async def _get_app(self) -> Any:
        if self._app is None:
            modal = _sdk.load()
            with translated("provision"):
                self._app = await modal.App.lookup.aio(
                    self._opts.app_name, create_if_missing=True, environment_name=self._opts.environment
                )
        return self._app

    async def _find(self, instance_id: str, *, fresh: bool = False) -> Any:
        """The running sandbox of ``instance_id``; a finished or vanished one is not found.
        A handle this process holds is used as it is (an exec or file call on a finished sandbox
        fails NOT_FOUND by itself) unless ``fresh`` asks Modal whether it still runs."""
        sb = self._sandboxes.get(instance_id)
        if sb is not None and not fresh:
            return sb
        if sb is None:
            modal = _sdk.load()
            app = await self._get_app()
            with translated("lookup", instance_id):
                async for found in modal.Sandbox.list.aio(
                    app_id=app.app_id, tags={LABEL_INSTANCE: instance_id}
                ):
                    sb = found  # no break: a generator left open is finalized later, by GC
            if sb is not None:
                with translated("lookup", instance_id):
                    self._remember(instance_id, await sb.get_tags.aio())
        if sb is None:
            raise InstanceNotFoundError(f"no running Modal sandbox for {instance_id!r}", op="lookup")
        with translated("lookup", instance_id):
            finished = await sb.poll.aio() is not None
        if finished:
            self._sandboxes[instance_id] = sb
            await self._forget(instance_id)
            raise InstanceNotFoundError(f"the Modal sandbox of {instance_id!r} has finished", op="lookup")
        self._sandboxes[instance_id] = sb
        return sb

    # ---- lifecycle -------------------------------------------------------------------------

    @part(Capability.CAPTURE)
    def capturer(self) -> ModalCapturer:
        """Captures are ``snapshot_filesystem`` images, found again by tag (``_capture``)."""
        return ModalCapturer(
            app_name=self._opts.app_name, woken=self.pauser.woken, start_with=self._create_with
        )

    @part(Capability.SNAPSHOT)
    def snapshotter(self) -> ModalSnapshotter:
        """Snapshots are ``snapshot_filesystem`` images too, the bound env kept out (``_snapshot``)."""
        app, woken = self._opts.app_name, self.pauser.woken
        return ModalSnapshotter(app, woken, self._create_with, self._channels, self._spool)

    async def _create(self, instance_id: str, cfg: ComputeConfig, labels: dict[str, str]) -> InstanceInfo:
        image = _sdk.load().Image.from_registry(cfg.image or self._opts.image)
        return await self._create_with(instance_id, cfg, labels, image)

    async def _create_with(
        self, instance_id: str, cfg: ComputeConfig, labels: dict[str, str], image: Any
    ) -> InstanceInfo:
        kwargs = _spec.create_kwargs(cfg, labels)
        return await self._start(
            instance_id, {**kwargs, "image": image, "env": dict(cfg.env), "workdir": cfg.working_dir}
        )

    async def _start(self, instance_id: str, kwargs: dict[str, Any]) -> InstanceInfo:
        """``Sandbox.create`` named after the instance (``kwargs``: ``_spec``'s, with the image,
        env and working dir); a retried create finds the one sandbox it made."""
        modal = _sdk.load()
        try:
            with translated("provision", instance_id):
                sb = await modal.Sandbox.create.aio(app=await self._get_app(), name=instance_id, **kwargs)
        except modal.exception.AlreadyExistsError:
            sb = await self._find(instance_id, fresh=True)
        self._sandboxes[instance_id] = sb
        self._envs[instance_id] = dict(kwargs["env"])
        self._remember(instance_id, kwargs["tags"])
        return self._info(instance_id, sb.object_id, kwargs["tags"])

    def _remember(self, instance_id: str, tags: dict[str, str]) -> None:
        """What this process needs of another's sandbox, from its tags."""
        self._workdirs[instance_id] = tags.get(_spec.TAG_WORKDIR, "/workspace")
        self._ports[instance_id] = _tunnels.from_tags(tags)
        if idle_timeout_s := tags.get(_spec.TAG_IDLE_TIMEOUT_S) or tags.get(_spec.TAG_IDLE_BEFORE):
            self._idle_timeout_s[instance_id] = float(idle_timeout_s)

    @part(Capability.PAUSE)
    def pauser(self) -> ModalPauser:
        boxes = Sandboxes(
            name=self.name,
            find=self._find,
            start=self._start,
            forget=self._forget,
            info=self._info,
            app=self._get_app,
            held=self._sandboxes,
            envs=self._envs,
        )
        store = PausedStore(self._opts.app_name, self._opts.environment)
        return ModalPauser(boxes, store, self.shutdown, self.resume)

    async def _status(self, instance_id: str) -> InstanceInfo:
        return await self.pauser.status(instance_id)

    async def _list(self) -> list[InstanceInfo]:
        return await self.pauser.listing()

    async def _destroy(self, instance_id: str) -> bool:
        return await self.pauser.destroy(instance_id)

    async def _forget(self, instance_id: str) -> None:
        """Drop this process's handle, closing its connections (``detach``: not a terminate)."""
        self._channels.drop(instance_id)
        self._envs.pop(instance_id, None)
        sb = self._sandboxes.pop(instance_id, None)
        if sb is not None:
            with contextlib.suppress(Exception):
                await sb.detach.aio()

    def _info(
        self,
        instance_id: str,
        sandbox_id: str,
        labels: dict[str, str],
        status: InstanceStatus = InstanceStatus.RUNNING,
        metadata: dict[str, str] | None = None,
    ) -> InstanceInfo:
        """A paused instance has no sandbox: ``sandbox_id`` is empty, ``metadata`` its image."""
        created = labels.get("praisonai.created")
        return InstanceInfo(
            instance_id=instance_id,
            provider=self.name,
            status=status,
            endpoint=f"modal://{sandbox_id}" if sandbox_id else "",
            created_at=float(created) if created else time.time(),
            labels=dict(labels),
            metadata={"sandbox_id": sandbox_id} if metadata is None else metadata,
        )

    def _workdir(self, instance_id: str) -> str:
        return self._workdirs.get(instance_id, "/workspace")

    # ---- the helper channel: one long-lived exec per instance (ChannelMixin) -------------------

    @property
    def _channels(self) -> ChannelPool:
        pool: ChannelPool | None = self.__dict__.get("_channel_pool")
        if pool is None:
            pool = self.__dict__["_channel_pool"] = LingeringPool(self._open_channel, self._linger)
        return pool

    def _linger(self, instance_id: str) -> float:
        idle = self._idle_timeout_s.get(instance_id)
        return min(LINGER_MAX_S, idle / 2) if idle else LINGER_MAX_S

    async def _open_channel(self, instance_id: str) -> Channel:
        opened = super()._open_channel  # on the handle woken holds: _transport needs it
        return await self.pauser.woken(instance_id, lambda _: opened(instance_id))

    def _transport(self, instance_id: str, argv: list[str]) -> ModalExecTransport:
        """The helper, under a guard that ends it once orphaned (see ``_transport.guarded``)."""
        return self._session_transport(instance_id, _transport.guarded(argv, self._spool(instance_id)))

    def _session_transport(self, instance_id: str, argv: list[str]) -> ModalExecTransport:
        sb = self._sandboxes.get(instance_id)
        if sb is None:
            raise InstanceNotFoundError(f"no running Modal sandbox for {instance_id!r}", op="exec")
        return _transport.start(sb, argv, instance_id)

    async def _channel_path(self, instance_id: str, path: str) -> str:
        await self.pauser.awake(instance_id)  # the working dir another process's sandbox was made with
        return _files.absolute(path, self._workdir(instance_id))

    async def _ping(self, instance_id: str) -> None:
        """Nothing: Modal sees a transfer itself (``sb.filesystem`` and tar run as execs)."""

    # ---- ports ---------------------------------------------------------------------------------

    @part(Capability.PORTS)
    def forwarder(self) -> _tunnels.TunnelsFirst:
        return _tunnels.TunnelsFirst(self._transport, self.execute, self._tunnel)

    async def _tunnel(self, instance_id: str, port: int) -> str | None:
        """A port declared at creation: its Modal tunnel's HTTPS URL (nothing forwarded here).
        Any other port: ``None`` (the exec relay's), since Modal cannot open one on a running sandbox."""
        await self.pauser.awake(instance_id)  # another process's sandbox: its tags name the ports
        if port not in self._ports.get(instance_id, frozenset()):
            return None

        async def url(_: Any) -> str:  # asked afresh: the SDK caches tunnels on the handle
            return await _tunnels.url(await self._find(instance_id, fresh=True), port, instance_id)

        return await self.pauser.woken(instance_id, url)

    # ---- terminals ---------------------------------------------------------------------------

    @part(Capability.PTY)
    def terminals(self) -> _pty.ModalTerminals:
        """``sb.exec(pty=True)`` (``_pty``); its resize and kill run through the helper channel."""
        return _pty.ModalTerminals(
            awake=self.pauser.awake, workdir=self._workdir, spool=self._spool, execute=self._channel_exec
        )

    # ---- exec ------------------------------------------------------------------------------

    async def _exec(self, instance_id: str, request: ExecRequest) -> ExecResult:
        """Through the helper channel: one vendor call per command (the request on the helper's
        stdin; its end and output come over the held stdio streams) against five for a native
        ``sb.exec`` (start, stdin EOF, two stdio reads, wait), and no 64 KiB argument cap."""
        try:
            return await self._channel_exec(instance_id, request)
        except ChannelClosedError as exc:
            try:
                await self._find(instance_id, fresh=True)
            except InstanceNotFoundError as gone:  # the sandbox went away under the command
                raise gone from exc
            raise

    # ---- files ---------------------------------------------------------------------------------

    async def _upload(self, instance_id: str, local: Path, remote: str) -> None:
        if local.is_file():  # as write_file, through the helper: a new file renamed over the target
            await self._write(instance_id, remote, await anyio.Path(local).read_bytes())
            return

        def where() -> str:  # once found: another process's sandbox has its own working dir
            return _files.absolute(remote, self._workdir(instance_id))

        await self.pauser.woken(instance_id, lambda sb: _files.upload(sb, local, where()))

    async def _download(self, instance_id: str, remote: str, local: Path) -> None:
        def where() -> str:  # as in _upload
            return _files.absolute(remote, self._workdir(instance_id))

        await self.pauser.woken(instance_id, lambda sb: _files.download(sb, where(), local))
