"""Modal compute: an instance is a Modal Sandbox (V2), driven through the official SDK (``modal``
>= 1.6.4, async ``.aio`` calls).

- provision: ``Sandbox.create`` in the app ``app_name`` (``App.lookup(create_if_missing=True)``),
  named after the praisonai instance id (Modal keeps names unique per app, so a retried create
  makes one sandbox), tagged with the praisonai labels (``list``/``ps``/``stop`` from any process
  find it by tag); env goes in the create request, never on a command line; ``idle_timeout`` is
  the idle policy (renewed by Modal on exec activity) and ``timeout`` the absolute ttl.
- exec: ``sb.exec("sh", "-c", cmd, text=False)`` with ``workdir``/``env``/``timeout``; a non-zero
  exit is returned, not raised; ``wait()`` returning -1 is Modal's timeout (its worker kills the
  command). A command longer than Modal's 64 KiB argument cap is written to a file first.
- files: ``sb.filesystem.read_bytes`` / ``write_bytes(data, path)`` (``sb.open`` is gone in 1.6).
- captures: ``snapshot_filesystem`` images, found again by tag (``_capture``).
Not offered (refused by capability): GPUs (they force the V1 backend, not yet tested), disk
limits, host mounts, background processes and sessions (Modal has no re-attach to an exec).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import math
import time
from pathlib import Path
from typing import Any, Literal

from praisonai._errors import InstanceNotFoundError, PathNotFoundError, ProvisionError
from praisonai._output import OutputBuffer, exec_result
from praisonai._types import Capability, ExecRequest, ExecResult, InstanceInfo, InstanceStatus
from praisonai.compute.base import ComputeProvider, SnapshotRef
from praisonai.compute.config import ComputeConfig, NetworkAllow
from praisonai.compute.lifecycle import LABEL_INSTANCE, LABEL_PROVIDER
from praisonai.compute.options import ProviderOptions
from praisonai.compute.providers.modal import _capture, _files, _sdk
from praisonai.compute.providers.modal._sdk import translated

ARG_MAX_BYTES = 65536  # modal/sandbox/_common.py: the sum of the argv lengths
MAX_LIFETIME_S = 24 * 3600  # Modal's longest sandbox timeout
_SCRIPT_DIR = "/tmp/.praisonai-cmd"
#: the instance's working dir, so another process resolves relative paths the same way
TAG_WORKDIR = "praisonai.modal.workdir"
_NO_CWD = "praisonai: no such working directory"
_NO_CWD_CODE = 211
# $0 the pidfile, $1 the working dir, $2 the command. Our own cd: what Modal does with a missing
# workdir is not documented, and a missing cwd must be a PathNotFoundError.
_GROUP = (
    f'cd -- "$1" 2>/dev/null || {{ echo "{_NO_CWD}" >&2; exit {_NO_CWD_CODE}; }}; '
    'mkdir -p "${0%/*}" && echo $$ > "$0"; sh -c -- "$2"; rc=$?; rm -f "$0"; exit "$rc"'
)


class ModalOptions(ProviderOptions):
    """``ModalProvider``'s options: the Modal app sandboxes live in, the default image, the
    Modal environment (``None``: the profile's)."""

    type: Literal["modal"] = "modal"
    app_name: str = "praisonai"
    image: str = "python:3.12-slim"
    environment: str | None = None


class ModalProvider(ComputeProvider):
    """Instances are Modal Sandboxes; see the module docstring."""

    name = "modal"
    capabilities = frozenset({
        Capability.IMAGE, Capability.CPU_LIMIT, Capability.MEMORY_LIMIT,
        Capability.NETWORK_NONE, Capability.NETWORK_ALLOWLIST, Capability.CAPTURE,
    })  # fmt: skip
    requires = ("modal",)
    extra = "modal"
    options_model = ModalOptions

    def __init__(self, *, app_name: str = "praisonai", image: str = "python:3.12-slim",
                 environment: str | None = None) -> None:  # fmt: skip
        self._opts = ModalOptions(app_name=app_name, image=image, environment=environment)
        self._app: Any = None
        self._sandboxes: dict[str, Any] = {}
        self._workdirs: dict[str, str] = {}

    @property
    def options(self) -> ModalOptions:
        return self._opts

    def unavailable_reason(self) -> str | None:
        try:
            _sdk.load()
        except ImportError as exc:
            return str(exc)
        return _sdk.credentials_reason()

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
                    tags = await sb.get_tags.aio()
                self._workdirs[instance_id] = tags.get(TAG_WORKDIR, "/workspace")
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

    async def _create(self, instance_id: str, cfg: ComputeConfig, labels: dict[str, str]) -> InstanceInfo:
        image = _sdk.load().Image.from_registry(cfg.image or self._opts.image)
        return await self._create_with(instance_id, cfg, labels, image)

    async def _create_from_snapshot(
        self, instance_id: str, cfg: ComputeConfig, labels: dict[str, str], snapshot: SnapshotRef
    ) -> InstanceInfo:
        try:
            return await self._create_with(instance_id, cfg, labels, _capture.image(snapshot))
        except InstanceNotFoundError as exc:  # NOT_FOUND at create: the image expired on Modal
            _capture.forget(self._opts.app_name, snapshot.ref)
            raise ProvisionError(
                f"Modal no longer has capture image {snapshot.ref}; provision again to rebuild it",
                op="provision",
            ) from exc

    async def _find_snapshot(self, tag: str) -> SnapshotRef | None:
        return await _capture.find(self._opts.app_name, tag, self.name)

    async def _snapshot(self, instance_id: str, tag: str, cfg: ComputeConfig) -> SnapshotRef:
        return await _capture.save(await self._find(instance_id), self._opts.app_name, tag, self.name)

    async def _create_with(
        self, instance_id: str, cfg: ComputeConfig, labels: dict[str, str], image: Any
    ) -> InstanceInfo:
        modal = _sdk.load()
        app = await self._get_app()
        kwargs: dict[str, Any] = {
            "app": app, "name": instance_id, "tags": labels, "env": dict(cfg.env), "image": image,
            "timeout": min(cfg.ttl_s or MAX_LIFETIME_S, MAX_LIFETIME_S),
            "idle_timeout": cfg.idle_timeout_s if cfg.auto_shutdown else None,
            "workdir": cfg.working_dir,
        }  # fmt: skip
        if cfg.cpu is not None:
            kwargs["cpu"] = cfg.cpu
        if cfg.memory_mb is not None:
            kwargs["memory"] = cfg.memory_mb
        if cfg.network == "none":
            kwargs["block_network"] = True
        elif isinstance(cfg.network, NetworkAllow):
            cidrs, domains = _split_allow(cfg.network.allow)
            kwargs["outbound_cidr_allowlist"] = cidrs or None
            kwargs["outbound_domain_allowlist"] = domains or None
        kwargs["tags"] = {**labels, TAG_WORKDIR: cfg.working_dir}
        try:
            with translated("provision", instance_id):
                sb = await modal.Sandbox.create.aio(**kwargs)
        except modal.exception.AlreadyExistsError:
            # the name is the instance id: a retried create finds the one sandbox it made
            sb = await self._find(instance_id, fresh=True)
        self._sandboxes[instance_id] = sb
        self._workdirs[instance_id] = cfg.working_dir
        return self._info(instance_id, sb.object_id, labels)

    async def _destroy(self, instance_id: str) -> bool:
        try:
            sb = await self._find(instance_id, fresh=True)
        except InstanceNotFoundError:
            return False  # a vanished sandbox counts as shut down
        with translated("shutdown", instance_id), contextlib.suppress(_sdk.load().exception.NotFoundError):
            await sb.terminate.aio()
        await self._forget(instance_id)
        return True

    async def _forget(self, instance_id: str) -> None:
        """Drop this process's handle, closing its connections (``detach``: not a terminate)."""
        sb = self._sandboxes.pop(instance_id, None)
        if sb is not None:
            with contextlib.suppress(Exception):
                await sb.detach.aio()

    async def _status(self, instance_id: str) -> InstanceInfo:
        sb = await self._find(instance_id, fresh=True)
        with translated("status", instance_id):
            tags = await sb.get_tags.aio()
        return self._info(instance_id, sb.object_id, tags)

    async def _list(self) -> list[InstanceInfo]:
        modal = _sdk.load()
        app = await self._get_app()
        found = []
        with translated("list"):
            async for sb in modal.Sandbox.list.aio(app_id=app.app_id, tags={LABEL_PROVIDER: self.name}):
                tags = await sb.get_tags.aio()
                if LABEL_INSTANCE in tags:
                    found.append(self._info(tags[LABEL_INSTANCE], sb.object_id, tags))
        return found

    def _info(self, instance_id: str, sandbox_id: str, labels: dict[str, str]) -> InstanceInfo:
        created = labels.get("praisonai.created")
        return InstanceInfo(
            instance_id=instance_id, provider=self.name, status=InstanceStatus.RUNNING,
            endpoint=f"modal://{sandbox_id}", created_at=float(created) if created else time.time(),
            labels=dict(labels), metadata={"sandbox_id": sandbox_id},
        )  # fmt: skip

    def _workdir(self, instance_id: str) -> str:
        return self._workdirs.get(instance_id, "/workspace")

    # ---- exec ------------------------------------------------------------------------------

    async def _exec(self, instance_id: str, request: ExecRequest) -> ExecResult:
        sb = await self._find(instance_id)
        workdir = _files.absolute(request.cwd or ".", self._workdir(instance_id))
        token = f"{_SCRIPT_DIR}/{time.time_ns()}"
        command = request.command
        if len(command) > ARG_MAX_BYTES - 1024:  # never past the cap: the command goes in a file
            await _files.write(sb, f"{token}.sh", command.encode())
            command = f'. {token}.sh; rc=$?; rm -f {token}.sh; exit "$rc"'
        # its own process group, recorded, so a timeout can kill the whole tree (below)
        argv = ["setsid", "-w", "sh", "-c", _GROUP, f"{token}.pg", workdir, command]
        timeout = None if request.timeout is None else max(1, math.ceil(request.timeout))
        out, err = OutputBuffer(request.max_output), OutputBuffer(request.max_output)
        with translated("exec", instance_id):
            try:
                proc = await sb.exec.aio(*argv, env=dict(request.env), timeout=timeout, text=False)
            except _sdk.load().exception.ConflictError as exc:
                raise InstanceNotFoundError(
                    f"the Modal sandbox of {instance_id!r} has finished", op="exec"
                ) from exc
            if request.stdin:
                proc.stdin.write(request.stdin)
            proc.stdin.write_eof()
            await proc.stdin.drain.aio()

            async def pump(stream: Any, buf: OutputBuffer, name: Literal["stdout", "stderr"]) -> None:
                async for chunk in stream:
                    buf.write(chunk)
                    if request.on_output is not None:
                        request.on_output(name, chunk)

            await asyncio.gather(pump(proc.stdout, out, "stdout"), pump(proc.stderr, err, "stderr"))
            code = await proc.wait.aio()
            if code == -1:  # Modal's client deadline passed; its worker's kill may lag: make sure
                kill = f'p=$(cat {token}.pg 2>/dev/null) && kill -KILL -"$p"; rm -f {token}.pg'
                killer = await sb.exec.aio("sh", "-c", kill, text=False)
                await killer.wait.aio()
        if code == _NO_CWD_CODE and err.text().strip() == _NO_CWD:
            raise PathNotFoundError(f"working directory {workdir} does not exist", op="exec")
        return exec_result(code, out, err, timed_out=code == -1)

    # ---- files ---------------------------------------------------------------------------------

    async def _read(self, instance_id: str, path: str) -> bytes:
        sb = await self._find(instance_id)
        return await _files.read(sb, _files.absolute(path, self._workdir(instance_id)))

    async def _write(self, instance_id: str, path: str, data: bytes) -> None:
        sb = await self._find(instance_id)
        await _files.write(sb, _files.absolute(path, self._workdir(instance_id)), data)

    async def _upload(self, instance_id: str, local: Path, remote: str) -> None:
        sb = await self._find(instance_id)
        await _files.upload(sb, local, _files.absolute(remote, self._workdir(instance_id)))

    async def _download(self, instance_id: str, remote: str, local: Path) -> None:
        sb = await self._find(instance_id)
        await _files.download(sb, _files.absolute(remote, self._workdir(instance_id)), local)


def _split_allow(hosts: list[str]) -> tuple[list[str], list[str]]:
    """``network.allow`` as Modal's two lists: CIDRs/addresses, and domains (wildcards kept)."""
    cidrs, domains = [], []
    for host in hosts:
        try:
            cidrs.append(str(ipaddress.ip_network(host, strict=False)))
        except ValueError:
            domains.append(host)
    return cidrs, domains
