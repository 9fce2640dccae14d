"""Fly.io compute: an instance is a Fly Machine, driven through the Machines REST API with httpx
(Fly has no SDK; cloud-sdks.md §5).

The app comes from the options (``FLY_APP_NAME``); it is created only when ``create_app`` says so,
never silently. Each machine is named by the instance id, so a create retried after a lost answer
cannot make a second machine (Fly refuses the name; the provider then adopts the first), and
carries the ``praisonai.*`` identity in ``config.metadata``, which Fly filters server-side, so any
process finds it. PID 1 is a keep-alive ``init``: the watchdog docker and kubernetes instances run
(``compute/watchdog.py``, its spool ``_exec.SPOOL``), which exits
when the machine is idle or past its ``ttl_s``, whereupon ``auto_destroy`` removes the machine.
The provider waits for ``started`` (the exec endpoint does not start a machine). Env goes in
``config.env`` at create and through the exec body per command.

Exec, files and background processes all go through the exec endpoint (see ``_exec``: the
payload in ``stdin``, never on a command line; long commands polled under Fly's 30 s limit, so
none meets its 408). Files are base64 in ``stdin`` (writes) and in the answer (reads), ``CHUNK``
bytes per exec (``_files``). Background processes are one-shot helper runs (``OneShotProcesses``).
Shutdown takes the machine's lease, then stop (with a ``{}`` body: an empty one is 400) and a
forced delete under its nonce; 404 is "already gone". ``guest`` carries cpus, memory and GPUs.

Refused by capability, each for a reason:
- captures: Fly has no root-filesystem snapshot (§5.6). A volume snapshot holds a volume only,
  while packages and setup write the image's root filesystem (/usr, /etc); a machine image must
  be built and pushed through a registry, outside the Machines API.
- snapshots (``sb.snapshot``, ``fork``): for the same reason; a running machine's files cannot
  be saved and started from again.
- sessions, streaming and the helper channel: the exec endpoint is one request, one answer, with
  no stdin stream and no streamed output; a shell kept across calls needs a byte stream in.
- network none and allowlists: Fly's network policies are ports-only and per app, take effect
  only after a restart (which resets the root filesystem), and do not cover the Fly Proxy.
- stop/start and pause: a restarted machine boots its image afresh (§5.2), so there is nothing
  to resume; ``/suspend`` keeps a memory snapshot that the next ``start`` may drop for such a
  cold boot, so it cannot promise the files either.
"""

from __future__ import annotations

import os
import posixpath
import shlex
from typing import Any, Literal

import anyio
from pydantic import SecretStr

from praisonai._errors import (
    AuthenticationError,
    ConfigError,
    ExecError,
    InstanceNotFoundError,
    ProviderUnavailableError,
)
from praisonai._limits import ERROR_DETAIL_CHARS
from praisonai._types import Capability, ExecRequest, ExecResult, InstanceInfo, InstanceStatus
from praisonai.compute import separation
from praisonai.compute.abilities import part
from praisonai.compute.base import ComputeProvider
from praisonai.compute.config import ComputeConfig
from praisonai.compute.lifecycle import LABEL_CREATED, LABEL_INSTANCE, LABEL_PROVIDER
from praisonai.compute.oneshot import OneShotProcesses
from praisonai.compute.options import ProviderOptions
from praisonai.compute.providers.flyio import _exec
from praisonai.compute.providers.flyio._client import FlyAPI, missing_credentials, raise_for
from praisonai.compute.providers.flyio._files import FlyFiles
from praisonai.compute.watchdog import watchdog_command

LABEL_WORKDIR = "praisonai.workdir"
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
    image: str = "debian:bookworm-slim"  # needs sh, base64, setsid, tar; setpriv and perl (command_user)


class FlyCompute(FlyFiles, ComputeProvider):
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
            Capability.GPU,
            Capability.ISOLATION,
            Capability.SELF_STOP,
        }
    )
    #: How ``env plan`` should describe what Fly does not do natively (``plan_notes``).
    plan_notes = dict.fromkeys(
        ("idle_timeout", "ttl"),
        (
            "emulated",
            "a watchdog in the machine (its PID 1) exits, even if this process dies; auto_destroy removes it",
        ),
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
        self._labels: dict[str, dict[str, str]] = {}  # instance id -> its metadata (never changes)
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
        user = separation.command_user(cfg)
        guest: dict[str, Any] = {
            "cpu_kind": "shared",
            "cpus": max(1, int(cfg.cpu or 1)),
            "memory_mb": max(256, int(cfg.memory_mb or 256)),
        }
        if cfg.gpu is not None:  # a count, or a Fly GPU kind ("a100-40gb", "l40s") for one of it
            named = not str(cfg.gpu).isdigit()
            guest.update(gpus=1 if named else int(cfg.gpu), **({"gpu_kind": str(cfg.gpu)} if named else {}))
            guest["cpu_kind"] = "performance"  # Fly's GPU machines are performance-class
        config = {
            "image": cfg.image or self._options.image,
            "guest": guest,
            "env": dict(cfg.env),
            "metadata": {**separation.labelled(labels, user), LABEL_WORKDIR: cfg.working_dir},
            # PID 1 keeps the machine up; idle or past its ttl it exits, and the machine goes.
            "init": {"exec": watchdog_command(cfg.lifetime, _exec.SPOOL)},
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
        self._labels[instance_id] = dict((machine.get("config") or {}).get("metadata") or {})
        await self._run_script(instance_id, _workdir_script(cfg.working_dir, user), 0, "provision")
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
        async with self.api.lease(app, machine_id, op="shutdown") as lease:
            if lease is None:  # destroyed meanwhile (its watchdog, another process)
                self._machine_ids.pop(instance_id, None)
                return False
            nonce = lease.nonce
            await self.api.request(
                "POST", f"{path}/stop", op="shutdown", body={}, allow=(404, 412), nonce=nonce
            )
            params = {"force": "true"}
            gone = await self.api.request(
                "DELETE", path, op="shutdown", params=params, allow=(404,), nonce=nonce
            )
            lease.done = True  # destroyed (or gone already): the lease went with it
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
            raise _exec.StepTimedOut(
                "Fly's exec endpoint timed out (it answers 408 past about 30 s) on a step meant to take "
                f"{wait_s:g} s; the machine may be overloaded",
                op=op,
            )
        answer = got.json()
        if answer.get("exit_code") == separation.REFUSED:  # cannot run commands apart: its one sentence
            raise ExecError((answer.get("stderr") or "").strip()[-ERROR_DETAIL_CHARS:], op=op)
        if answer.get("exit_code"):  # omitted when 0
            said = (answer.get("stderr") or "").strip()[-ERROR_DETAIL_CHARS:]
            raise ExecError(f"the machine could not run the praisonai exec script: {said}", op=op)
        return str(answer.get("stdout") or "")

    async def _label(self, instance_id: str, name: str, op: str) -> str | None:
        """The instance's metadata value ``name`` (looked up once per instance)."""
        if instance_id not in self._labels:
            machine = await self._machine(instance_id, op)
            self._labels[instance_id] = dict((machine.get("config") or {}).get("metadata") or {})
        return self._labels[instance_id].get(name)

    async def _workdir(self, instance_id: str, op: str) -> str:
        return await self._label(instance_id, LABEL_WORKDIR, op) or "/"

    async def _command_user(self, instance_id: str) -> str | None:
        return await self._label(instance_id, separation.LABEL_COMMAND_USER, "exec") or None

    async def _path(self, instance_id: str, path: str, op: str) -> str:
        return posixpath.normpath(posixpath.join(await self._workdir(instance_id, op), path))

    async def _exec(self, instance_id: str, request: ExecRequest) -> ExecResult:
        cwd = await self._path(instance_id, request.cwd or ".", "exec")

        user = None if request.privileged else await self._command_user(instance_id)

        async def call(script: str, wait_s: float) -> str:
            return await self._run_script(instance_id, script, wait_s)

        return await _exec.run(call, request, cwd, user)

    async def _read_spool(self, instance_id: str, path: str) -> bytes:
        return await self._get(instance_id, path, path, None)

    @part(Capability.PROCESSES)
    def process_table(self) -> OneShotProcesses:
        """Background processes: one helper run per request through ``_exec`` (``compute.oneshot``)."""
        return OneShotProcesses(self.name, self._exec, self._read_spool, self._command_user)

    async def _after_setup(self, instance_id: str) -> None:
        """What packages and setup (root's) made in the working dir is the commands' uid's."""
        user = await self._command_user(instance_id)
        if user is not None:
            await separation.hand_over(
                self, instance_id, await self._workdir(instance_id, "provision"), user, "provision"
            )


def _workdir_script(working_dir: str, user: str | None) -> str:
    """Make the working dir; with a command user, check that the machine can run commands as it,
    and give it the working dir when root owns that (but /)."""
    q = shlex.quote(working_dir)
    if user is None:
        return f"mkdir -p -- {q}\n"
    give = f'[ "$(cd -- {q} && pwd)" = / ] || [ -z "$(find {q} -maxdepth 0 -user 0)" ] || chown {user} {q}'
    return separation.check(user) + f"mkdir -p -- {q} && {{ {give}; }}\n"


#: PraisonAI's name for this class (``praisonai.integrations.compute.flyio.FlyioCompute``).
FlyioCompute = FlyCompute
