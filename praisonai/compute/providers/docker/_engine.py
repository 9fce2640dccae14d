"""``DockerEngine``: docker compute on one engine, whose instances are hardened, labelled containers
that idle until removed.

Containers run ``docker-init`` as PID 1, drop every capability but a minimal set, set
no-new-privileges and pids/cpu/memory limits, and take their network from the config. The config's
env is bound through the helper after the start, never put in the container's config (a capture's
``ContainerConfig.Env`` would keep it). Each exec carries a private marker in its environment, so a
timeout kills the command's whole process tree *inside* the container, setsid children included.
Found again by labels from any process; docker-py is imported lazily. A ``DockerPool`` holds one
``DockerEngine`` per host and forwards each primitive (and its pauser) to the one that owns it."""

from __future__ import annotations

import functools
import os
import posixpath
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from praisonai import _telemetry
from praisonai._errors import InstanceNotFoundError, PathNotFoundError, ProviderUnavailableError
from praisonai._types import Capability, InstanceInfo
from praisonai.compute._threads import run_blocking
from praisonai.compute.abilities import part
from praisonai.compute.base import ComputeProvider
from praisonai.compute.channel import ChannelMixin
from praisonai.compute.config import ComputeConfig, Runtime
from praisonai.compute.lifecycle import LABEL_CREATED, check_home
from praisonai.compute.providers.docker import (
    _attach,
    _egress,
    _main,
    _runtime,
    _spec,
    _users,
    _workspace,
)
from praisonai.compute.providers.docker._capture import DockerCapturer
from praisonai.compute.providers.docker._client import (
    DockerHost,
    close_client,
    container_name,
    containers_of,
    daemon_down,
    engine_client,
    exec_errors,
    info_of,
    pull_image,
    remove_container,
    sdk,
    shared_client,
    start_errors,
    unusable,
)
from praisonai.compute.providers.docker._exec import DockerExecTransport
from praisonai.compute.providers.docker._once import DockerLauncher
from praisonai.compute.providers.docker._options import (
    BUILD_HINT,
    CAPABILITIES,
    DEFAULT_IMAGE,
    DockerOptions,
    docker_options,
)
from praisonai.compute.providers.docker._pause import DockerPauser
from praisonai.compute.providers.docker._ports import DockerForwarder
from praisonai.compute.separation import command_user, labelled, own_shell, session
from praisonai.runtime.channel import Channel

T = TypeVar("T")


class DockerEngine(ChannelMixin, ComputeProvider):
    """Containers on one engine: ``DockerCompute()``'s (``base_url``, else ``DOCKER_HOST``), or a
    pool's host (``host``)."""

    name = "docker"
    options_model = DockerOptions
    requires = ("docker",)
    extra = "docker"
    capabilities = CAPABILITIES

    def __init__(
        self,
        *,
        image: str | None = None,
        base_url: str | None = None,
        pull: bool = True,
        runtime: Runtime | None = None,
        host: DockerHost | None = None,
    ) -> None:
        """``image``: the default image (else ``$PRAISONAI_DOCKER_IMAGE``, else the sandbox image);
        ``base_url``: the engine (else ``$DOCKER_HOST``); ``pull``: may pull a missing public image;
        ``runtime``: when a config names none (``"runsc"``: gVisor, ``_runtime``). ``host``: a pool's
        engine, with its TLS or ssh settings (checked now), whose client this engine makes for itself."""
        if host is not None:
            engine_client(host, connect=False)  # refuses what cannot be pooled, now
            base_url = host.url
        self._options = docker_options(image, base_url, pull, runtime, ())
        self.default_image = self._options.image
        self.pull = self._options.pull
        self._base_url = self._options.base_url
        self._host = host
        self._api: Any = None
        self._connecting = threading.Lock()  # one client (one ssh login) per engine
        self._workdirs: dict[str, str] = {}
        self._users: dict[str, str | None] = {}  # the commands' "UID:GID" (compute.separation)
        self._runtimes: set[str] = set()  # listed by the engine (_runtime.check_registered)
        self._main_keys = _main.MainKeys()
        local = host is None or host.url.startswith("unix://")
        self._socket = _attach.local_socket(self._base_url) if local else None
        self._main = _main.MainChannels(keys=self._main_keys, connect=self.connect, socket_path=self._socket)
        self._archives = _workspace.Archives(call=self._call, connect=self.connect, execute=self.execute)

    @property
    def options(self) -> DockerOptions:
        return self._options

    @part(Capability.PORTS)
    def forwarder(self) -> DockerForwarder:
        return DockerForwarder(self._transport, self.execute, self._engine_is_local, self._inspect_now)

    @functools.cached_property
    def egress(self) -> _egress.DockerEgress:
        return _egress.DockerEgress(self.connect, self._call)

    @part(Capability.CAPTURE)
    def capturer(self) -> DockerCapturer:
        """Captures are images committed from this engine's containers (``_capture``)."""
        return DockerCapturer(self._call, self.connect, self._channels, self.processes.bind_env, self._start)

    @part(None)
    def launcher(self) -> DockerLauncher:
        """A one-shot run is a container whose own process is the command (``_once``)."""
        return DockerLauncher(self._call, self.connect, self._new_container, self._destroy, self._options)

    def connect(self) -> Any:
        """docker-py's low-level ``APIClient`` for this engine, made on first use (blocking: it asks
        the engine its API version): one per address, shared process-wide, or a pool host's own."""
        with self._connecting:
            if self._api is None:
                sdk()  # loaded here first, without paramiko
                self._api = shared_client(self._base_url) if self._host is None else engine_client(self._host)
            return self._api

    @property
    def api(self) -> Any:
        """The engine's client (``connect``)."""
        return self.connect()

    @part(Capability.PAUSE)
    def pauser(self) -> DockerPauser:
        keys, channels, spool = self._main_keys, self._channels, self._spool
        return DockerPauser(self._call, self.connect, self._inspect, channels, keys, spool, self.shutdown)

    def close(self) -> None:
        """Close the client this engine made for itself (a pool host's) and release its ssh forward
        (``_client.close_client``). The engine still works afterwards: its next call connects again."""
        if self._host is None:
            return  # the shared client stays open
        with self._connecting:
            api, self._api = self._api, None
        if api is not None:
            close_client(api, self._host)

    def holds(self, instance_id: str) -> bool:
        """Whether the instance's container is on this engine, in any state (blocking: one call)."""
        return bool(self.api.containers(all=True, filters={"name": f"^/{container_name(instance_id)}$"}))

    def listing(self) -> list[InstanceInfo]:
        """This provider's containers here, once swept for gc and ps (egress proxies, left spools)."""
        _egress.sweep(self.api)
        _spec.sweep(self.api)
        return containers_of(self.api, self.name)

    async def _call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run one blocking docker-py call in a worker thread, translating a dead daemon."""
        import requests

        _telemetry.vendor_call("docker", getattr(fn, "__qualname__", "a call"), self._base_url)

        def call() -> T:
            try:
                return fn(*args, **kwargs)
            except requests.exceptions.ConnectionError as exc:
                raise ProviderUnavailableError(daemon_down(exc, self._base_url), op="docker") from None

        return await run_blocking(call)

    def unavailable_reason(self) -> str | None:
        return unusable(self.connect, self.default_image, BUILD_HINT)

    # ---- lifecycle -------------------------------------------------------------------------

    def check_supported(self, cfg: ComputeConfig) -> None:
        """Also refuse a mount whose host path is missing: the engine would create it, as root."""
        super().check_supported(cfg)
        _runtime.chosen(self._options.runtime, cfg)  # a config and a provider that disagree
        self.egress.hosts(cfg)  # refuses what its proxy cannot match (CIDR blocks, ports)
        if self._engine_is_local():  # else its paths are on another host, whose engine refuses a missing one
            _spec.check_host_paths(cfg)

    def _engine_is_local(self) -> bool:
        where = self._base_url or os.environ.get("DOCKER_HOST") or "unix://"
        return where.startswith(("unix://", "npipe://"))

    async def _create(self, instance_id: str, cfg: ComputeConfig, labels: dict[str, str]) -> InstanceInfo:
        return await self._start(instance_id, cfg, labels, cfg.image or self.default_image)

    async def _start(
        self, instance_id: str, cfg: ComputeConfig, labels: dict[str, str], image: str
    ) -> InstanceInfo:
        from praisonai.compute.watchdog import watchdog_command

        runtime = _runtime.chosen(self._options.runtime, cfg)
        await self._call(_runtime.check_registered, self.api, runtime, self._runtimes)  # before anything
        with start_errors(image):
            # The watchdog stops it when idle (auto_remove removes it); the main stdin's helper: _main
            nonce, spool, user = _main.new_key(), self._spool(instance_id), command_user(cfg)
            command = _main.command(watchdog_command(cfg.lifetime, spool), spool, nonce, user)
            defaults, own_env = cfg.split_env()
            labels = labelled(labels, user)
            await self._new_container(
                instance_id, cfg, labels, command, image, stdin=True, env=defaults, spool=spool
            )
            await self._call(self.api.start, container_name(instance_id))
            self._main_keys.made(instance_id, nonce)
            # never a silent fallback to runc; a failure here removes the instance (lifecycle)
            await self._call(_runtime.confirm, self.api, container_name(instance_id), runtime, cfg)
        self._workdirs[instance_id], self._users[instance_id] = cfg.working_dir, user
        if own_env:  # through the helper, never the container's config (see the module docstring)
            await self.processes.bind_env(instance_id, own_env)
        return InstanceInfo(
            instance_id=instance_id,
            provider=self.name,
            endpoint=f"docker://{container_name(instance_id)}",
            created_at=float(labels[LABEL_CREATED]),
            labels=labels,
            metadata={"image": image},
        )

    async def _new_container(
        self,
        instance_id: str,
        cfg: ComputeConfig,
        labels: dict[str, str],
        command: list[str],
        image: str,
        *,
        stdin: bool = False,
        env: dict[str, str] | None = None,
        spool: str | None = None,
    ) -> None:
        """Create (not start) the hardened container (``_spec``) of ``image`` running ``command``
        under docker-init, removed once it ends; pull a missing image where allowed. ``stdin``: the
        command reads an attached client's input; ``env``: a one-shot run's, or an instance's defaults
        (``split_env``), never a secret (captures commit it); ``spool``: an instance's helper spool."""
        docker = sdk()
        api = self.api
        runtime = _runtime.chosen(self._options.runtime, cfg)
        host_config = _spec.host_config(api, cfg, runtime, local=self._engine_is_local(), spool=spool)
        create = lambda env: api.create_container(  # noqa: E731
            image,
            command=command,
            name=container_name(instance_id),
            labels=labels,
            environment=env,
            working_dir=cfg.working_dir,
            host_config=host_config,
            stdin_open=stdin,
            detach=not stdin,  # docker-py sets StdinOnce (EOF when the input ends) only when not detached
        )
        try:
            await self.egress.create(cfg, env, create)
        except docker.errors.ImageNotFound:
            await self._pull(image)
            await self.egress.create(cfg, env, create)

    async def _pull(self, image: str) -> None:
        allowed = self.pull and image != DEFAULT_IMAGE
        await self._call(pull_image, self.api, image, allowed=allowed, hint=BUILD_HINT)

    async def _destroy(self, instance_id: str) -> bool:
        self._workdirs.pop(instance_id, None)
        self._users.pop(instance_id, None)
        self._main_keys.drop(instance_id)
        self._channels.drop(instance_id)
        if not await self._call(remove_container, self.api, container_name(instance_id)):
            return False
        await self.egress.sweep("shutdown")  # and the proxy, with the last instance of its allowlist
        return True

    async def _status(self, instance_id: str) -> InstanceInfo:
        return info_of(await self._inspect(instance_id))

    async def _inspect(self, instance_id: str) -> dict[str, Any]:
        docker = sdk()
        try:
            return await self._call(self.api.inspect_container, container_name(instance_id))
        except docker.errors.NotFound:
            raise InstanceNotFoundError(f"no docker instance {instance_id!r}", op="lookup") from None

    async def _list(self) -> list[InstanceInfo]:
        return await self._call(self.listing)

    async def _workdir(self, instance_id: str) -> str:
        """The container's working dir, looked up once per instance: also the check, before any
        channel, file or terminal touches it, that this home made it (``lifecycle.check_home``).
        Every instance in ``_workdirs`` passed it (or was made or adopted here)."""
        if instance_id not in self._workdirs:
            await self._look_up(instance_id)
        return self._workdirs[instance_id]

    async def _command_user(self, instance_id: str) -> str | None:
        if instance_id not in self._users:
            await self._look_up(instance_id)
        return self._users[instance_id]

    async def _look_up(self, instance_id: str) -> None:
        """The instance's working dir and command user, from its container's config."""
        if self._socket is None:
            inspected = await self._inspect(instance_id)
        else:  # raw on a local engine: no docker-py to import
            inspected = await run_blocking(self._inspect_now, container_name(instance_id))
        self._looked_up(instance_id, inspected)

    def _looked_up(self, instance_id: str, inspected: dict[str, Any]) -> None:
        """Keep what ``inspected`` says, once it is this home's instance (every call comes here first)."""
        config = inspected["Config"]
        check_home(instance_id, config.get("Labels") or {}, "exec")
        self._workdirs[instance_id] = config.get("WorkingDir") or "/"
        self._users[instance_id] = _users.user_of(inspected)

    async def _channel_path(self, instance_id: str, path: str) -> str:
        return posixpath.normpath(posixpath.join(await self._workdir(instance_id), path))

    # ---- exec, reads and writes: through the instance's channel (ChannelMixin) -------------

    def _transport(self, instance_id: str, argv: list[str]) -> DockerExecTransport:
        with exec_errors(instance_id):
            return DockerExecTransport(self.api, container_name(instance_id), own_shell(argv))

    def _session_transport(self, instance_id: str, argv: list[str]) -> DockerExecTransport:
        """A session shell, as the command user, whose commands keep the instance alive only while
        this client is connected (``_watchdog.guarded_session``)."""
        if instance_id not in self._users:  # blocking already: this runs in a worker thread
            self._looked_up(instance_id, self._inspect_now(container_name(instance_id)))
        return self._transport(instance_id, session(self._spool(instance_id), self._users[instance_id], argv))

    # ---- the main channel (``_main``) and archives (``_workspace``) ---------------------------

    async def provision(self, config: object = None) -> InstanceInfo:
        """As ``ComputeProvider``'s; this process's first channel to the instance is then its
        main one (unless handed off)."""
        info = await super().provision(config)
        self._main_keys.arm(info.instance_id)
        return info

    def handoff_key(self, instance_id: str) -> str | None:
        """As ``ComputeProvider``'s: the nonce of the helper on the container's main stdin (``_main``)."""
        return self._main_keys.hand(instance_id)

    def adopt(self, instance_id: str, key: str) -> None:
        """As ``ComputeProvider``'s; the key is one use and only the claimer's, checked against the
        container's command (blocking; ``_main.MainChannels.adopt`` says how, and what it raises:
        ``ConfigError`` for a key that is not this instance's or is used, ``InstanceNotFoundError``)."""
        self._check_id(instance_id)
        self._workdirs[instance_id], self._users[instance_id] = self._main.adopt(instance_id, key)

    def _inspect_now(self, container: str) -> dict[str, Any]:
        """The container's inspection, blocking (``_main.MainChannels.inspect_now``)."""
        return self._main.inspect_now(container)

    async def _open_channel(self, instance_id: str) -> Channel:
        """The main channel when this process may open it, else (or when it fails) an exec one; a
        paused instance's first channel resumes it, and is then the main one (``_pause``)."""

        async def main_or_exec(iid: str) -> Channel:  # inside the waking: a resume arms a new main key
            main = await self._main.open(iid, self._spool(iid))
            return main if main is not None else await ChannelMixin._open_channel(self, iid)

        await self._workdir(instance_id)  # another home's instance is refused before it wakes
        return await self.pauser.waking(instance_id, main_or_exec, self.resume)

    async def _upload(self, instance_id: str, local: Path, remote: str) -> None:
        target, user = await self._channel_path(instance_id, remote), await self._command_user(instance_id)
        await self._archives.upload(instance_id, local, target, remote, user)

    async def _download(self, instance_id: str, remote: str, local: Path) -> None:
        target = await self._channel_path(instance_id, remote)
        if not await self._archives.download(instance_id, target, local, remote):
            await self._inspect(instance_id)  # raises InstanceNotFoundError when that is the cause
            raise PathNotFoundError(f"no such file or directory in the instance: {remote}", op="read")

    async def _unpack_archive(self, instance_id: str, archive: Path, remote_dir: str) -> bool:
        target = await self._channel_path(instance_id, remote_dir)
        await self._archives.unpack(instance_id, archive, target, remote_dir)
        await self._hand_over(instance_id, target, "upload")  # the directories the engine made
        return True
