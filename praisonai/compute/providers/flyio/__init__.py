"""Fly.io compute: an instance is a Fly Machine, driven through the Machines REST API with httpx
(Fly has no SDK; cloud-sdks.md §5).

The app comes from the options (``FLY_APP_NAME``); it is created only when ``create_app`` says so,
never silently. Each machine is named by the instance id, so a create retried after a lost answer
cannot make a second machine (Fly refuses the name; the provider then adopts the first), and
carries the ``praisonai.*`` identity in ``config.metadata``, which Fly filters server-side, so any
process finds it. PID 1 is a keep-alive ``init``: a watchdog (``_exec.WATCHDOG``) that exits
when the machine is idle or past its ``ttl_s``, whereupon ``auto_destroy`` removes the machine.
The provider waits for ``started`` (the exec endpoint does not start a machine). Env goes in
``config.env`` at create and through the exec body per command.

Exec, files and background processes all go through the exec endpoint (see ``_exec``: the
payload in ``stdin``, never on a command line; long commands polled under Fly's 30 s limit).
Files are base64 in ``stdin`` (writes) and in the answer (reads), ``CHUNK`` bytes per exec.
Shutdown is stop (with a ``{}`` body: an empty one is 400) then a forced delete; 404 is "already
gone". Not here: captures (Fly has no rootfs snapshot), sessions and streaming (no stdin stream),
network policies, and stop/start (it resets the root filesystem).
"""

from __future__ import annotations

import base64
import os
import posixpath
import shlex
import uuid
from pathlib import Path
from typing import Any, Literal

import anyio
from pydantic import SecretStr

from praisonai._errors import (
    AuthenticationError,
    ConfigError,
    ExecError,
    InstanceNotFoundError,
    PathNotFoundError,
    ProviderUnavailableError,
)
from praisonai._types import Capability, ExecRequest, ExecResult, InstanceInfo, InstanceStatus
from praisonai.compute import _tar
from praisonai.compute.base import ComputeProvider
from praisonai.compute.config import ComputeConfig
from praisonai.compute.lifecycle import LABEL_CREATED, LABEL_INSTANCE, LABEL_PROVIDER
from praisonai.compute.oneshot import OneShotProcesses
from praisonai.compute.options import ProviderOptions
from praisonai.compute.providers.flyio import _exec
from praisonai.compute.providers.flyio._client import FlyAPI, missing_credentials, raise_for

LABEL_WORKDIR = "praisonai.workdir"
CHUNK = 512 * 1024  # file bytes per exec: stdin and answer sizes are undocumented
_XFER_DIR = "/tmp/.praisonai-xfer"
_STARTED_WITHIN_S = 300.0
_STATES = {
    "started": InstanceStatus.RUNNING,
    "stopped": InstanceStatus.STOPPED,
    "suspended": InstanceStatus.STOPPED,
    "failed": InstanceStatus.ERROR,
    "launch_failed": InstanceStatus.ERROR,
}


class FlyOptions(ProviderOptions):
    """``FlyCompute``'s options; ``None`` reads ``FLY_API_TOKEN``, ``FLY_APP_NAME``, ``FLY_API_HOSTNAME``."""

    type: Literal["flyio"] = "flyio"
    api_token: SecretStr | None = None
    app: str | None = None
    api_url: str | None = None
    create_app: bool = False
    org_slug: str = "personal"
    region: str | None = None
    image: str = "debian:bookworm-slim"  # needs sh, base64, setsid, tar


class FlyCompute(OneShotProcesses, ComputeProvider):
    """Instances are Fly Machines; see the module docstring."""

    name = "flyio"
    options_model = FlyOptions
    requires = ("httpx",)
    extra = "flyio"
    capabilities = frozenset(
        {
            Capability.IMAGE,
            Capability.CPU_LIMIT,
            Capability.MEMORY_LIMIT,
            Capability.ISOLATION,
            Capability.PROCESSES,
        }
    )

    def __init__(
        self,
        *,
        api_token: str | SecretStr | None = None,
        app: str | None = None,
        api_url: str | None = None,
        create_app: bool = False,
        org_slug: str = "personal",
        region: str | None = None,
        image: str | None = None,
    ) -> None:
        given = {
            "api_token": api_token,
            "app": app,
            "api_url": api_url,
            "create_app": create_app,
            "org_slug": org_slug,
            "region": region,
        }
        self._options = FlyOptions.parse({**given, **({"image": image} if image else {})})
        token = self._options.api_token
        self.api = FlyAPI(None if token is None else token.get_secret_value(), self._options.api_url)
        self._machine_ids: dict[str, str] = {}  # instance id -> machine id (never changes)
        self._workdirs: dict[str, str] = {}  # instance id -> working dir (never changes)
        self._app_checked = False

    @property
    def options(self) -> FlyOptions:
        return self._options

    def unavailable_reason(self) -> str | None:
        token = self._options.api_token
        return missing_credentials(None if token is None else token.get_secret_value(), self._options.app)

    def _app(self, op: str) -> str:
        reason = self.unavailable_reason()
        if reason:
            raise (ConfigError if "FLY_APP_NAME" in reason else AuthenticationError)(reason, op=op)
        return self._options.app or os.environ["FLY_APP_NAME"]

    # ---- machines --------------------------------------------------------------------------

    async def _ensure_app(self, app: str) -> None:
        """The app exists, or is created when ``create_app`` is set; never silently."""
        if self._app_checked:
            return
        found = await self.api.request("GET", f"/apps/{app}", op="provision", allow=(404,))
        if found.status_code == 404:
            if not self._options.create_app:
                raise ConfigError(
                    f"the Fly app {app!r} does not exist; create it (fly apps create {app}) "
                    "or pass create_app=True",
                    op="provision",
                )
            body = {"app_name": app, "org_slug": self._options.org_slug}
            await self.api.request("POST", "/apps", op="provision", body=body, allow=(422,))
        self._app_checked = True

    async def _machine(self, instance_id: str, op: str) -> dict[str, Any]:
        """The instance's machine (by its metadata; unknown or destroyed -> InstanceNotFoundError)."""
        app = self._app(op)
        params = {f"metadata.{LABEL_INSTANCE}": instance_id, f"metadata.{LABEL_PROVIDER}": self.name}
        found = (await self.api.request("GET", f"/apps/{app}/machines", op=op, params=params)).json()
        for machine in found:
            if machine.get("name") == instance_id and machine.get("state") not in ("destroyed", "destroying"):
                self._machine_ids[instance_id] = machine["id"]
                return dict(machine)
        raise InstanceNotFoundError(f"no Fly machine for instance {instance_id!r}", op=op)

    async def _machine_id(self, instance_id: str, op: str) -> str:
        if instance_id not in self._machine_ids:
            await self._machine(instance_id, op)
        return self._machine_ids[instance_id]

    async def _create(self, instance_id: str, cfg: ComputeConfig, labels: dict[str, str]) -> InstanceInfo:
        app = self._app("provision")
        await self._ensure_app(app)
        lifetime = cfg.lifetime
        idle = int(lifetime.idle_timeout_s) if lifetime.auto_shutdown else 0
        guest: dict[str, Any] = {
            "cpu_kind": "shared",
            "cpus": max(1, int(cfg.cpu or 1)),
            "memory_mb": max(256, int(cfg.memory_mb or 256)),
        }
        config = {
            "image": cfg.image or self._options.image,
            "guest": guest,
            "env": dict(cfg.env),
            "metadata": {**labels, LABEL_WORKDIR: cfg.working_dir},
            # PID 1 keeps the machine up; idle or past its ttl it exits, and the machine goes.
            "init": {
                "exec": [
                    "/bin/sh",
                    "-c",
                    _exec.WATCHDOG,
                    "praisonai-watchdog",
                    str(idle),
                    str(int(lifetime.ttl_s or 0)),
                ]
            },
            "auto_destroy": True,
            "restart": {"policy": "no"},
        }
        body: dict[str, Any] = {"name": instance_id, "config": config}
        if self._options.region:
            body["region"] = self._options.region
        made = await self.api.request(
            "POST", f"/apps/{app}/machines", op="provision", body=body, allow=(409, 422)
        )
        if made.status_code in (409, 422):  # our earlier attempt made it and its answer was lost...
            try:
                machine = await self._machine(instance_id, "provision")
            except InstanceNotFoundError:  # ...or not: Fly says 409 for "insufficient memory" too
                raise_for(made, "provision", capacity=True)
                raise
        else:
            machine = made.json()
            self._machine_ids[instance_id] = machine["id"]
        await self._wait_started(app, machine["id"], machine.get("instance_id"))
        self._workdirs[instance_id] = cfg.working_dir
        await self._exec(instance_id, ExecRequest(f"mkdir -p -- {shlex.quote(cfg.working_dir)}", cwd="/"))
        return self._info({**machine, "state": "started"})  # as the wait saw it: no GET more

    async def _wait_started(self, app: str, machine_id: str, version: str | None) -> None:
        """Loop Fly's ``wait`` (at most 60 s a call, 408 when it expires) until ``started``;
        ``version`` (the machine's ``instance_id``) pins the wait to this version, as fly-go does."""
        params = {"state": "started", "timeout": "60", **({"instance_id": version} if version else {})}
        path = f"/apps/{app}/machines/{machine_id}/wait"
        with anyio.move_on_after(_STARTED_WITHIN_S):
            while True:
                got = await self.api.request("GET", path, op="provision", params=params, allow=(408,))
                if got.status_code != 408:
                    return
        raise ProviderUnavailableError(
            f"Fly machine {machine_id} did not reach 'started' in {_STARTED_WITHIN_S:g} s", op="provision"
        )

    async def _destroy(self, instance_id: str) -> bool:
        app = self._app("shutdown")
        try:
            machine_id = await self._machine_id(instance_id, "shutdown")
        except InstanceNotFoundError:
            return False
        path = f"/apps/{app}/machines/{machine_id}"
        await self.api.request("POST", f"{path}/stop", op="shutdown", body={}, allow=(404, 412))
        gone = await self.api.request("DELETE", path, op="shutdown", params={"force": "true"}, allow=(404,))
        self._machine_ids.pop(instance_id, None)
        return gone.status_code != 404

    async def _status(self, instance_id: str) -> InstanceInfo:
        return self._info(await self._machine(instance_id, "status"))

    async def _list(self) -> list[InstanceInfo]:
        app = self._app("list")
        params = {f"metadata.{LABEL_PROVIDER}": self.name}
        found = (await self.api.request("GET", f"/apps/{app}/machines", op="list", params=params)).json()
        return [
            self._info(m)
            for m in found
            if (m.get("config") or {}).get("metadata", {}).get(LABEL_INSTANCE) == m.get("name")
            and m.get("state") not in ("destroyed", "destroying")
        ]

    def _info(self, machine: dict[str, Any]) -> InstanceInfo:
        labels = dict((machine.get("config") or {}).get("metadata") or {})
        state = str(machine.get("state") or "unknown")
        booting = state in ("created", "creating", "starting")
        status = _STATES.get(state, InstanceStatus.PROVISIONING if booting else InstanceStatus.ERROR)
        return InstanceInfo(
            instance_id=machine["name"],
            provider=self.name,
            status=status,
            endpoint=f"flyio://{machine['id']}",
            created_at=float(labels.get(LABEL_CREATED, 0)),
            labels=labels,
            metadata={
                "machine_id": machine["id"],
                "state": state,
                "region": machine.get("region"),
                "working_dir": labels.get(LABEL_WORKDIR, "/"),
            },
        )

    # ---- exec ------------------------------------------------------------------------------

    async def _run_script(self, instance_id: str, script: str, wait_s: float, op: str = "exec") -> str:
        """One exec of ``script`` (through BOOT, in ``stdin``); its stdout (stderr on a failure)."""
        app = self._app(op)
        machine_id = await self._machine_id(instance_id, op)
        body = {
            "command": ["sh", "-c", _exec.BOOT],
            "stdin": _exec.stdin_for(script),
            "timeout": int(wait_s) + 8,
        }
        path = f"/apps/{app}/machines/{machine_id}/exec"
        got = await self.api.request("POST", path, op=op, body=body, allow=(404, 408), idempotent=False)
        if got.status_code == 404:
            self._machine_ids.pop(instance_id, None)
            raise InstanceNotFoundError(f"no Fly machine for instance {instance_id!r}", op=op)
        if got.status_code == 408:
            raise ExecError(
                "Fly's exec endpoint timed out (it answers 408 past about 30 s) on a step meant to take "
                f"{wait_s:g} s; the machine may be overloaded",
                op=op,
            )
        answer = got.json()
        if answer.get("exit_code"):  # omitted when 0
            said = (answer.get("stderr") or "").strip()[-300:]
            raise ExecError(f"the machine could not run the praisonai exec script: {said}", op=op)
        return str(answer.get("stdout") or "")

    async def _workdir(self, instance_id: str, op: str) -> str:
        if instance_id not in self._workdirs:
            machine = await self._machine(instance_id, op)
            self._workdirs[instance_id] = (
                (machine.get("config") or {}).get("metadata", {}).get(LABEL_WORKDIR, "/")
            )
        return self._workdirs[instance_id]

    async def _path(self, instance_id: str, path: str, op: str) -> str:
        return posixpath.normpath(posixpath.join(await self._workdir(instance_id, op), path))

    async def _exec(self, instance_id: str, request: ExecRequest) -> ExecResult:
        cwd = await self._path(instance_id, request.cwd or ".", "exec")

        async def call(script: str, wait_s: float) -> str:
            return await self._run_script(instance_id, script, wait_s)

        return await _exec.run(call, request, cwd)

    # ---- files: base64 through the exec endpoint, CHUNK bytes per call ----------------------

    async def _read(self, instance_id: str, path: str) -> bytes:
        target = shlex.quote(await self._path(instance_id, path, "read_file"))
        parts: list[bytes] = []
        offset, size = 0, None
        while size is None or offset < size:
            script = (
                f"if [ -d {target} ]; then echo D; elif [ ! -f {target} ]; then echo N; else "
                f"echo F $(wc -c < {target}); tail -c +{offset + 1} {target} | head -c {CHUNK} | base64; fi\n"
            )
            said = await self._run_script(instance_id, script, 0, "read_file")
            kind, _, rest = said.partition("\n")
            if kind == "N":
                raise PathNotFoundError(f"no such file in the Fly machine: {path}", op="read_file")
            if kind == "D":
                raise IsADirectoryError(f"{path} is a directory in the Fly machine")
            size = int(kind.split()[1])
            parts.append(base64.b64decode("".join(rest.split())))
            offset += len(parts[-1])
            if not parts[-1] and offset < size:
                raise ExecError(f"{path} shrank while it was read", op="read_file")
        return b"".join(parts)

    async def _write(self, instance_id: str, path: str, data: bytes) -> None:
        target = await self._path(instance_id, path, "write_file")
        part = shlex.quote(f"{target}.praisonai-{uuid.uuid4().hex[:8]}")
        q = shlex.quote(target)
        for start in range(0, max(1, len(data)), CHUNK):
            redirect = f"{'>' if start == 0 else '>>'} {part}"
            script = f'mkdir -p -- "$(dirname -- {q})" || exit 1\n'
            script += _exec.heredoc(data[start : start + CHUNK], redirect)
            if start + CHUNK >= len(data):
                script += f"mv -f -- {part} {q}\n"
            await self._run_script(instance_id, script, 0, "write_file")

    async def _upload(self, instance_id: str, local: Path, remote: str) -> None:
        target = await self._path(instance_id, remote, "upload")
        tar = await anyio.to_thread.run_sync(_tar.pack_path, local, posixpath.basename(target) or "root")
        archive = f"{_XFER_DIR}/{uuid.uuid4().hex}.tar"
        await self._write(instance_id, archive, tar)
        q = shlex.quote
        parent = q(posixpath.dirname(target))
        script = (
            f"mkdir -p -- {parent} && tar -xf {q(archive)} -C {parent}; rc=$?; "
            f"rm -f -- {q(archive)}; [ $rc = 0 ] || echo failed\n"
        )
        if "failed" in await self._run_script(instance_id, script, 0, "upload"):
            raise ExecError(f"could not unpack the upload at {remote} in the Fly machine", op="upload")

    async def _download(self, instance_id: str, remote: str, local: Path) -> None:
        target = await self._path(instance_id, remote, "download")
        q = shlex.quote
        archive = f"{_XFER_DIR}/{uuid.uuid4().hex}.tar"
        script = (
            f"if [ -d {q(target)} ]; then mkdir -p {_XFER_DIR} && tar -cf {q(archive)} -C "
            f"{q(posixpath.dirname(target))} {q(posixpath.basename(target))} && echo D; "
            f"elif [ -f {q(target)} ]; then echo F; else echo N; fi\n"
        )
        kind = (await self._run_script(instance_id, script, 0, "download")).strip()
        if kind == "N":
            raise PathNotFoundError(f"no such file or directory in the instance: {remote}", op="download")
        if kind == "F":
            data = await self._read(instance_id, target)
            local.parent.mkdir(parents=True, exist_ok=True)
            await anyio.Path(local).write_bytes(data)
            return
        tar = await self._read(instance_id, archive)
        await self._run_script(instance_id, f"rm -f -- {q(archive)}\n", 0, "download")
        await anyio.to_thread.run_sync(_tar.unpack_to, [tar], local)
