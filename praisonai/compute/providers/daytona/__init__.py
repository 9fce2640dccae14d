"""Daytona compute: an instance is a Daytona sandbox, driven through the official ``daytona`` SDK.

Every sandbox carries the ``praisonai.*`` identity as Daytona **labels**, so any process finds it
with ``list(labels=...)`` (sandboxes without them are not ours). The sandbox's name is the
instance id, so a retried create cannot make a second one (Daytona answers 409). Env goes in
``env_vars`` at create and ``env`` per exec (never on a command line). Exec keeps stdout and
stderr apart with a wrapper script (see ``_exec``; ``process.exec`` alone merges them).

Lifetimes are Daytona's own: ``auto_stop_interval`` (idle minutes, rounded up) with
``auto_delete_interval=0`` so a stopped sandbox goes away, ``ttl_minutes`` for ``ttl_s``. Daytona
counts API calls as activity but not processes inside the sandbox, so a running exec renews it
(``refresh_activity``) every ``renew_s``. Deleting is idempotent here: Daytona's second delete is
404, which counts as "already gone".

Pause is Daytona's ``stop``/``start`` of the same sandbox, kept while paused (``_pause``). Files: ``_files``.

Captures are Daytona snapshots named ``praisonai-<capture tag>`` (``create_snapshot``, then
``create(CreateSandboxFromSnapshotParams(snapshot=name))``); a snapshot keeps the filesystem, not
the env, and a sandbox made from one takes the snapshot's resources (``_capture``). Snapshots of a
running instance are Daytona snapshots too, named by home and id; no restore in place (``_snapshot``).

Background processes run through the instance helper, one ``exec`` per operation
(``compute.oneshot``): listed, read, waited for and killed by id from any process. A terminal
(``open_pty``) is Daytona's own PTY session; close kills its whole process tree (``_pty``). Not
here: shell sessions (``exec`` has no stdin to keep a shell on) and live streaming of output, each
refused by capability. ``network: {allow: [...]}`` maps to Daytona's ``network_allow_list``
(addresses, CIDRs) and ``domain_allow_list`` (host names).
"""

from __future__ import annotations

import contextlib
import functools
import ipaddress
import math
import posixpath
import shlex
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated, Any, Literal, cast

import anyio
from pydantic import SecretStr

from praisonai._errors import InstanceNotFoundError, PathNotFoundError, UnsupportedFeatureError
from praisonai._lifetime import whole_units
from praisonai._types import Capability, ExecRequest, ExecResult, InstanceInfo, InstanceStatus
from praisonai.compute import _tar
from praisonai.compute.abilities import part
from praisonai.compute.base import ComputeProvider
from praisonai.compute.config import ComputeConfig, NetworkAllow
from praisonai.compute.lifecycle import LABEL_CREATED, LABEL_INSTANCE, LABEL_PROVIDER
from praisonai.compute.oneshot import OneShotProcesses
from praisonai.compute.options import ProviderOptions, bounded
from praisonai.compute.providers.daytona import _exec, _files, _pause, _ports, _pty
from praisonai.compute.providers.daytona._capture import DaytonaCapturer
from praisonai.compute.providers.daytona._client import client, missing_credentials, translated
from praisonai.compute.providers.daytona._snapshot import DaytonaSnapshotter

LABEL_WORKDIR = "praisonai.workdir"
_XFER_DIR = "/tmp/.praisonai-xfer"
_STATES = {
    "started": InstanceStatus.RUNNING,
    "stopped": InstanceStatus.STOPPED,
    "archived": InstanceStatus.STOPPED,
    "paused": InstanceStatus.STOPPED,
    "error": InstanceStatus.ERROR,
    "build_failed": InstanceStatus.ERROR,
}


class DaytonaOptions(ProviderOptions):
    """``DaytonaCompute``'s options; each ``None`` is read where the SDK reads it
    (``DAYTONA_API_KEY``, ``DAYTONA_API_URL``, ``DAYTONA_TARGET``)."""

    type: Literal["daytona"] = "daytona"
    api_key: SecretStr | None = None
    api_url: str | None = None
    target: str | None = None
    image: str | None = None
    renew_s: Annotated[float, bounded("renew_s")] = 60.0


#: The operations that resume a paused sandbox first (as a docker or E2B instance's next call does).
_WAKING = frozenset({"exec", "read_file", "write_file", "upload", "download", "expose", "open_pty", "files"})


class DaytonaCompute(ComputeProvider):
    """Instances are Daytona sandboxes; see the module docstring."""

    name = "daytona"
    options_model = DaytonaOptions
    requires = ("daytona",)
    extra = "daytona"
    capabilities = frozenset(
        {
            Capability.IMAGE,
            Capability.CPU_LIMIT,
            Capability.MEMORY_LIMIT,
            Capability.GPU,
            Capability.NETWORK_NONE,
            Capability.ISOLATION,
            Capability.SELF_STOP,
            Capability.NETWORK_ALLOWLIST,
        }
    )

    def __init__(
        self,
        *,
        api_key: str | SecretStr | None = None,
        api_url: str | None = None,
        target: str | None = None,
        image: str | None = None,
        renew_s: float = 60.0,
    ) -> None:
        self._options = DaytonaOptions.parse(
            {"api_key": api_key, "api_url": api_url, "target": target, "image": image, "renew_s": renew_s}
        )

    @property
    def options(self) -> DaytonaOptions:
        return self._options

    @part(Capability.PORTS)
    def forwarder(self) -> _ports.SignedPreviews:
        """Daytona's signed preview URLs (``_ports``)."""
        return _ports.SignedPreviews(self._sandbox)

    def unavailable_reason(self) -> str | None:
        return missing_credentials(self._key())

    def _key(self) -> str | None:
        key = self._options.api_key
        return None if key is None else key.get_secret_value()

    @part(Capability.CAPTURE)
    def capturer(self) -> DaytonaCapturer:
        """Captures are Daytona snapshots named by the capture tag (``_capture``)."""
        return DaytonaCapturer(client=self._client, sandbox=self._sandbox, start=self._start)

    @part(Capability.SNAPSHOT)
    def snapshotter(self) -> DaytonaSnapshotter:
        """Snapshots are Daytona snapshots of a running sandbox, named by home and id (``_snapshot``)."""
        return DaytonaSnapshotter(self._client, self._sandbox, self._start)

    def _client(self) -> contextlib.AbstractAsyncContextManager[Any]:
        return client(self._key(), self._options.api_url, self._options.target)

    @contextlib.asynccontextmanager
    async def _sandbox(self, instance_id: str, op: str) -> AsyncIterator[Any]:
        """The instance's ``AsyncSandbox`` (by name: the instance id); unknown -> InstanceNotFoundError."""
        async with self._client() as sdk:
            with translated(op, instance_id=instance_id):
                sandbox = await sdk.get(instance_id)
            state = str(getattr(sandbox.state, "value", sandbox.state))
            if sandbox.labels.get(LABEL_PROVIDER) != self.name or state in ("destroyed", "destroying"):
                raise InstanceNotFoundError(f"no Daytona sandbox for instance {instance_id!r}", op=op)
            if op in _WAKING and _pause.is_paused(sandbox):  # a paused instance's next call resumes it
                await self.resume(instance_id)
                with translated(op, instance_id=instance_id):
                    sandbox = await sdk.get(instance_id)
            yield sandbox

    # ---- lifecycle -------------------------------------------------------------------------

    async def _create(self, instance_id: str, cfg: ComputeConfig, labels: dict[str, str]) -> InstanceInfo:
        return await self._start(instance_id, cfg, labels, None)

    async def _start(
        self, instance_id: str, cfg: ComputeConfig, labels: dict[str, str], snapshot: str | None
    ) -> InstanceInfo:
        from daytona import CreateSandboxFromImageParams, CreateSandboxFromSnapshotParams, Resources

        lifetime = cfg.lifetime
        image = cfg.image or self._options.image
        resources = None
        if cfg.cpu is not None or cfg.memory_mb is not None or cfg.gpu is not None:
            resources = Resources(
                cpu=None if cfg.cpu is None else max(1, math.ceil(cfg.cpu)),
                memory=None if cfg.memory_mb is None else max(1, math.ceil(cfg.memory_mb / 1024)),  # GiB
                gpu=None if cfg.gpu is None else (int(cfg.gpu) if str(cfg.gpu).isdigit() else 1),
                gpu_type=None if cfg.gpu is None or str(cfg.gpu).isdigit() else cast(Any, str(cfg.gpu)),
            )
        if resources is not None and (image is None or snapshot is not None):
            raise UnsupportedFeatureError(
                "Daytona applies cpu, memory and gpu only to a sandbox built from an image; "
                "give an image in the config (or DaytonaCompute(image=...))",
                op="provision",
            )
        common: dict[str, Any] = dict(
            name=instance_id,
            env_vars=dict(cfg.env),
            labels={**labels, LABEL_WORKDIR: cfg.working_dir},
            auto_stop_interval=whole_units(lifetime.idle_limit_s, 60),  # minutes; 0: never
            auto_delete_interval=0,  # stopped (idle) is gone, as on every other provider
            ttl_minutes=None if lifetime.ttl_s is None else whole_units(lifetime.ttl_s, 60),
            network_block_all=cfg.network == "none",
            **_allow_lists(cfg),
        )
        params: Any = (
            CreateSandboxFromSnapshotParams(snapshot=snapshot, **common)  # None: Daytona's default
            if image is None or snapshot is not None
            else CreateSandboxFromImageParams(image=image, resources=resources, **common)
        )
        async with self._client() as sdk:
            with translated("provision", instance_id=instance_id):
                sandbox = await sdk.create(params, timeout=300)
            script = f"mkdir -p -- {_q(cfg.working_dir)}"
            with translated("provision", instance_id=instance_id):
                await sandbox.process.exec(f"sh -c {_q(script)}", timeout=60)
            return self._info(sandbox)

    async def _destroy(self, instance_id: str) -> bool:
        self.forwarder.links.forget(instance_id)  # Daytona ends their links with the sandbox
        try:
            async with self._sandbox(instance_id, "shutdown") as sandbox:
                with translated("shutdown", instance_id=instance_id):
                    await sandbox.delete()
        except InstanceNotFoundError:
            return False  # never there, or already deleted (Daytona's second delete is a 404)
        return True

    async def _status(self, instance_id: str) -> InstanceInfo:
        async with self._sandbox(instance_id, "status") as sandbox:
            return self._info(sandbox)

    async def _list(self) -> list[InstanceInfo]:
        from daytona import ListSandboxesQuery

        found = []
        async with self._client() as sdk:
            with translated("list"):
                async for sandbox in sdk.list(ListSandboxesQuery(labels={LABEL_PROVIDER: self.name})):
                    if sandbox.labels.get(LABEL_INSTANCE) == sandbox.name:
                        found.append(self._info(sandbox))
        return found

    def _info(self, sandbox: Any) -> InstanceInfo:
        labels = dict(sandbox.labels)
        state = str(getattr(sandbox.state, "value", sandbox.state) or "unknown")
        return InstanceInfo(
            instance_id=sandbox.name,
            provider=self.name,
            status=InstanceStatus.PAUSED
            if _pause.is_paused(sandbox)
            else _STATES.get(state, InstanceStatus.PROVISIONING if "ing" in state else InstanceStatus.ERROR),
            endpoint=f"daytona://{sandbox.id}",
            created_at=float(labels.get(LABEL_CREATED, 0)),
            labels=labels,
            metadata={
                "sandbox_id": sandbox.id,
                "state": state,
                "working_dir": labels.get(LABEL_WORKDIR, "/"),
            },
        )

    @part(Capability.PAUSE)
    def pauser(self) -> _pause.DaytonaPauser:
        return _pause.DaytonaPauser(self._sandbox, self._info)

    # ---- exec ------------------------------------------------------------------------------

    async def _exec(self, instance_id: str, request: ExecRequest) -> ExecResult:
        async with self._sandbox(instance_id, "exec") as sandbox:
            cwd = self._path(sandbox, request.cwd or ".")

            async def renew() -> None:
                while True:
                    await anyio.sleep(self._options.renew_s)
                    with contextlib.suppress(Exception):  # a missed renewal is not the command's failure
                        await sandbox.refresh_activity()

            return await _exec.run(sandbox, request, cwd, renew)

    @part(Capability.PTY)
    def terminals(self) -> _pty.DaytonaTerminals:
        """Daytona's PTY sessions (``_pty``)."""
        return _pty.DaytonaTerminals(sandbox=self._sandbox, path=self._path, renew_s=self._options.renew_s)

    @part(Capability.PROCESSES)
    def process_table(self) -> OneShotProcesses:
        """Background processes: one helper run per request through ``_exec`` (``compute.oneshot``)."""
        return OneShotProcesses(self.name, self._exec, self._read)

    # ---- files -----------------------------------------------------------------------------

    def _path(self, sandbox: Any, path: str) -> str:
        return posixpath.normpath(posixpath.join(sandbox.labels.get(LABEL_WORKDIR, "/"), path))

    @functools.cached_property
    def file_tree(self) -> _files.DaytonaFiles:
        """The daemon's own file calls where they keep the contract, the script elsewhere (``_files``)."""
        return _files.DaytonaFiles(self.execute, sandbox=self._sandbox, path=self._path)

    async def _write(self, instance_id: str, path: str, data: bytes) -> None:
        await self.file_tree.put_whole(instance_id, path, bytes(data), "write_file")  # str: a local path

    async def _read(self, instance_id: str, path: str) -> bytes:
        async with self._sandbox(instance_id, "read_file") as sandbox:
            with translated("read_file", instance_id=instance_id, path=path):
                data: bytes = await sandbox.fs.download_file(self._path(sandbox, path))
            return data

    async def _upload(self, instance_id: str, local: Path, remote: str) -> None:
        from daytona import FileUpload

        if not local.is_dir():  # as write_file: whole or not at all
            await self.file_tree.put_whole(instance_id, remote, str(local), "upload")
            return
        async with self._sandbox(instance_id, "upload") as sandbox:
            target = self._path(sandbox, remote)
            files = [
                FileUpload(source=str(p), destination=posixpath.join(target, *p.relative_to(local).parts))
                for p in sorted(local.rglob("*"))
                if p.is_file()
            ]
            with translated("upload", instance_id=instance_id):
                if files:
                    await sandbox.fs.upload_files(files)
                else:
                    await sandbox.fs.create_folder(target, "755")

    async def _download(self, instance_id: str, remote: str, local: Path) -> None:
        async with self._sandbox(instance_id, "download") as sandbox:
            target = self._path(sandbox, remote)
            archive = f"{_XFER_DIR}/{uuid.uuid4().hex}.tar"  # not from the name: it may be 255 bytes
            script = (
                f"if [ -d {_q(target)} ]; then mkdir -p {_XFER_DIR} && "
                f"tar -cf {_q(archive)} -C {_q(posixpath.dirname(target))} "
                f"{_q(posixpath.basename(target))} && echo D; "
                f"elif [ -f {_q(target)} ]; then echo F; else echo N; fi"
            )
            with translated("download", instance_id=instance_id):
                kind = (await sandbox.process.exec(f"sh -c {_q(script)}", timeout=300)).result.strip()
            if kind == "N":
                raise PathNotFoundError(f"no such file or directory in the instance: {remote}", op="download")
            if kind == "F":
                local.parent.mkdir(parents=True, exist_ok=True)
                with translated("download", instance_id=instance_id, path=remote):
                    await sandbox.fs.download_file(target, str(local))
                return
            with translated("download", instance_id=instance_id, path=remote):
                tar = await sandbox.fs.download_file(archive)
                await sandbox.fs.delete_file(archive)
            await anyio.to_thread.run_sync(_tar.unpack_to, [tar], local, remote)


def _allow_lists(cfg: ComputeConfig) -> dict[str, str]:
    """``network: {allow: [...]}`` as Daytona's two comma-separated strings: addresses and CIDRs
    go to ``network_allow_list``, host names (``*.example.org`` too) to ``domain_allow_list``."""
    if not isinstance(cfg.network, NetworkAllow):
        return {}
    nets, domains = [], []
    for host in cfg.network.allow:
        try:
            nets.append(str(ipaddress.ip_network(host, strict=False)))
        except ValueError:
            domains.append(host)
    found = {"network_allow_list": ",".join(nets), "domain_allow_list": ",".join(domains)}
    return {key: value for key, value in found.items() if value}


_q = shlex.quote
