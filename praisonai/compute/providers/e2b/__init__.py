"""E2B compute: an instance is an E2B sandbox, driven through the official ``e2b`` SDK (async).

- **Identity.** Every sandbox carries the ``praisonai.*`` labels as E2B metadata (server-side),
  plus ``praisonai.workdir`` and ``praisonai.ttl_deadline``; any process finds an instance by
  listing sandboxes whose metadata holds its ``praisonai.instance`` id.
- **Lifetime.** E2B's ``timeout`` is an absolute deadline, not an idle timer. The sandbox is
  created with the idle limit as its timeout and renewed (``set_timeout``) on activity, and kept
  renewed while a command runs, so a busy task is never killed by it; the ttl is an absolute
  deadline kept in metadata that every renewal is clamped to. So the sandbox stops itself when
  idle or past its ttl, with no client alive (``self_stop``). E2B caps a timeout at the plan's
  maximum (1 h Hobby, 24 h Pro); an instance without ``auto_shutdown`` is renewed up to that.
  What counts as activity, and who renews: ``_renewal``.
- **Exec, files, terminals**: ``_exec`` (run in the background, exit code from ``CommandExitException``,
  kill at the timeout), ``_files`` (bytes both ways with ``format="bytes"``; trees as tar), ``_pty``;
  ``_fileops``: the file API through envd's own calls where they never follow a link.
- **Background processes, sessions, bind_env** go through our helper channel (``ChannelMixin``)
  over one long-lived envd process each (``_channel``, which says why that is binary-safe here).
  Exec stays native: measured through the wire fake, ``execute("true")`` costs 1 envd call
  natively and 1.06 over the channel (``echo hi``: 1 against 2.06, as the helper's spooled output
  is fetched with a second request), and a vendor call is what costs time on a real network.
- The SDK is imported lazily: this module loads without it. Templates, not images: a config's
  ``image``, ``cpu``, ``memory_mb``, ``gpu``, ``disk_mb``, mounts and packages are refused (set the
  provider's ``template``).
- **Pause** is E2B's native pause (memory and filesystem), and any later use connects, which
  resumes it under the same sandbox id (``_pause``).
- **Ports** are E2B's public preview hosts, ``https://{port}-{sandbox_id}.{domain}`` (``_ports``).
- **Captures** are named E2B snapshots (``praisonai-capture-<tag>``), found by name from any
  process; a new instance starts from the snapshot id as its template.
- **Snapshots** of a running instance are filesystem-only E2B snapshots named by home and id, the
  bound env kept out; no restore in place (``_snapshot``).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import posixpath
import shlex
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import SecretStr

from praisonai._errors import (
    AuthenticationError,
    InstanceNotFoundError,
    MissingDependencyError,
    ProvisionError,
)
from praisonai._tasks import beside
from praisonai._types import Capability, ExecRequest, ExecResult, InstanceInfo, InstanceStatus
from praisonai.compute.abilities import part
from praisonai.compute.base import ComputeProvider
from praisonai.compute.channel import ChannelMixin
from praisonai.compute.config import ComputeConfig
from praisonai.compute.lifecycle import LABEL_CREATED, LABEL_INSTANCE, LABEL_PROVIDER
from praisonai.compute.options import ProviderOptions
from praisonai.compute.providers.e2b import _exec, _files, _ports
from praisonai.compute.providers.e2b._capture import E2BCapturer
from praisonai.compute.providers.e2b._channel import E2BTransport
from praisonai.compute.providers.e2b._errors import KEY_VARIABLE, MISSING_KEY, translated
from praisonai.compute.providers.e2b._fileops import E2BFiles
from praisonai.compute.providers.e2b._meta import (
    IDLE_TIMEOUT_S,
    TTL_DEADLINE,
    WORKDIR,
    create_options,
    idle_timeout_text,
    info_of,
    renewal_s,
    status_of,
    timeout_for,
)
from praisonai.compute.providers.e2b._pause import E2BPauser
from praisonai.compute.providers.e2b._processes import E2BProcesses
from praisonai.compute.providers.e2b._pty import E2BTerminals
from praisonai.compute.providers.e2b._renewal import Renewals
from praisonai.compute.providers.e2b._snapshot import E2BSnapshotter
from praisonai.runtime.channel import Channel
from praisonai.runtime.transport import Transport


class E2BOptions(ProviderOptions):
    """The e2b provider's options: the sandbox template, and the API key and domain (else
    ``E2B_API_KEY`` and ``E2B_DOMAIN``, as the SDK reads them)."""

    type: Literal["e2b"] = "e2b"
    template: str = "base"
    api_key: SecretStr | None = None
    domain: str | None = None


class E2BCompute(ChannelMixin, ComputeProvider):
    """Instances are E2B sandboxes; see the module docstring."""

    name = "e2b"
    capabilities = frozenset(
        {
            Capability.ISOLATION,
            Capability.NETWORK_NONE,
            Capability.NETWORK_ALLOWLIST,
            Capability.SELF_STOP,
        }
    )
    requires = ("e2b",)
    extra = "e2b"
    options_model = E2BOptions

    def __init__(
        self, *, template: str = "base", api_key: SecretStr | str | None = None, domain: str | None = None
    ) -> None:
        self._template = template
        self._api_key = api_key.get_secret_value() if isinstance(api_key, SecretStr) else api_key
        self._domain = domain
        self._sandboxes: dict[str, Any] = {}  # instance id -> connected AsyncSandbox
        self._metadata: dict[str, dict[str, str]] = {}  # instance id -> its sandbox's metadata
        self._renewals = Renewals(self._sandboxes, self._metadata, self._params)
        self._sync: dict[str, Any] = {}  # instance id -> a sync e2b.Sandbox, for channel transports

    @property
    def options(self) -> E2BOptions:
        key = None if self._api_key is None else SecretStr(self._api_key)
        return E2BOptions(template=self._template, api_key=key, domain=self._domain)

    @part(Capability.PORTS)
    def forwarder(self) -> _ports.PreviewHosts:
        """Native: E2B's preview hosts (``_ports``)."""
        return _ports.PreviewHosts(self._sandbox)

    def unavailable_reason(self) -> str | None:
        if importlib.util.find_spec("e2b") is None:
            return "the e2b SDK is not installed: pip install 'praisonai[e2b]'"
        if not (self._api_key or os.environ.get(KEY_VARIABLE)):
            return MISSING_KEY
        return None

    @part(Capability.CAPTURE)
    def capturer(self) -> E2BCapturer:
        return E2BCapturer(params=self._params, sandbox=self._sandbox, start=self._start)

    @part(Capability.SNAPSHOT)
    def snapshotter(self) -> E2BSnapshotter:
        """Filesystem-only E2B snapshots named by home and id, the bound env kept out (``_snapshot``)."""
        return E2BSnapshotter(self._params, self._sandbox, self._start, self._channels, self._env_file)

    def _params(self) -> dict[str, Any]:
        """The SDK's ``ApiParams`` this provider was given (the SDK reads the rest from env)."""
        if importlib.util.find_spec("e2b") is None:
            raise MissingDependencyError(
                "the e2b provider needs the e2b SDK: pip install 'praisonai[e2b]'", op="provision"
            )
        if not (self._api_key or os.environ.get(KEY_VARIABLE)):
            raise AuthenticationError(MISSING_KEY, op="provision")
        params: dict[str, Any] = {}
        if self._api_key:
            params["api_key"] = self._api_key
        if self._domain:
            params["domain"] = self._domain
        return params

    # ---- instances ---------------------------------------------------------------------------

    async def _create(self, instance_id: str, cfg: ComputeConfig, labels: dict[str, str]) -> InstanceInfo:
        return await self._start(instance_id, cfg, labels, self._template)

    async def _start(
        self, instance_id: str, cfg: ComputeConfig, labels: dict[str, str], template: str
    ) -> InstanceInfo:
        from e2b import AsyncSandbox

        lifetime = cfg.lifetime
        created = float(labels[LABEL_CREATED])
        deadline = "" if lifetime.ttl_s is None else str(int(created + lifetime.ttl_s))
        idle = lifetime.idle_limit_s
        metadata = {
            **labels,
            WORKDIR: cfg.working_dir,
            TTL_DEADLINE: deadline,
            IDLE_TIMEOUT_S: idle_timeout_text(idle),
        }
        with translated("provision", instance_id):
            sandbox = await AsyncSandbox.create(
                template=template,
                timeout=timeout_for(idle, deadline),
                metadata=metadata,
                envs=dict(cfg.env),  # in the create body, never on a command line
                idempotency_key=instance_id.lower().replace("_", "-"),  # a retried create makes one
                **create_options(cfg),
                **self._params(),
            )
        self._sandboxes[instance_id], self._metadata[instance_id] = sandbox, metadata
        self._renewals.renewed[instance_id] = time.monotonic()
        mkdir = ExecRequest(f"mkdir -p -- {shlex.quote(cfg.working_dir)}")
        result = await _exec.run(sandbox, instance_id, mkdir, "/")
        if result.exit_code != 0:
            raise ProvisionError(f"cannot create {cfg.working_dir}: {result.stderr.strip()}", op="provision")
        return info_of(instance_id, sandbox.sandbox_id, metadata, InstanceStatus.RUNNING)

    async def _lookup(self, instance_id: str) -> tuple[str, dict[str, str]] | None:
        """The E2B sandbox of ``instance_id`` and its metadata, found by that metadata (any
        process may have made it); ``None`` when there is none (never made, killed, expired)."""
        if instance_id in self._sandboxes:
            return str(self._sandboxes[instance_id].sandbox_id), self._metadata[instance_id]
        found = await self._find({LABEL_INSTANCE: instance_id})
        return (found[0].sandbox_id, dict(found[0].metadata)) if found else None

    async def _find(self, metadata: dict[str, str]) -> list[Any]:
        from e2b import AsyncSandbox, SandboxQuery

        with translated("list"):
            pages = AsyncSandbox.list(query=SandboxQuery(metadata=metadata), **self._params())
            rows: list[Any] = []
            while pages.has_next:
                rows += await pages.next_items()
        return rows

    @functools.cached_property
    def file_tree(self) -> E2BFiles:
        """Files through envd's own calls where they never follow a link (``_fileops``)."""
        return E2BFiles(self.execute, target=self._channel_path, sandbox=self._sandbox, path=self._path)

    async def _sandbox(self, instance_id: str) -> Any:
        """The connected sandbox of ``instance_id``, renewed for the activity about to happen."""
        from e2b import AsyncSandbox

        sandbox = self._sandboxes.get(instance_id)
        if sandbox is None:
            found = await self._lookup(instance_id)
            if found is None:
                raise InstanceNotFoundError(f"no e2b instance {instance_id!r}", op="lookup")
            sandbox_id, metadata = found
            with translated("connect", instance_id):
                timeout = renewal_s(metadata)
                # connect() without a timeout would set E2B's 300 s default (cloud-sdks.md §1.8.3)
                sandbox = await AsyncSandbox.connect(sandbox_id, timeout=timeout, **self._params())
            self._sandboxes[instance_id], self._metadata[instance_id] = sandbox, metadata
            self._renewals.renewed[instance_id] = time.monotonic()
        await self._renewals.renew(instance_id, sandbox)
        return sandbox

    async def _destroy(self, instance_id: str) -> bool:
        from e2b import AsyncSandbox

        found = await self._lookup(instance_id)
        self._disconnect(instance_id)
        if found is None:
            return False  # never made, or already gone (expired counts as shut down)
        with translated("shutdown", instance_id):
            return bool(await AsyncSandbox.kill(found[0], **self._params()))  # False: gone meanwhile

    def _disconnect(self, instance_id: str) -> None:
        """Forget this process's connections to the instance (shut down, or paused: E2B drops a
        paused sandbox's connections, and the next use connects again, which resumes it)."""
        self._sandboxes.pop(instance_id, None)
        self._metadata.pop(instance_id, None)
        self._renewals.forget(instance_id)
        self._sync.pop(instance_id, None)
        self._channels.drop(instance_id)

    @part(Capability.PAUSE)
    def pauser(self) -> E2BPauser:
        return E2BPauser(self._lookup, self._sandbox, self._status, self._disconnect, self._params)

    async def _status(self, instance_id: str) -> InstanceInfo:
        from e2b import AsyncSandbox

        found = await self._lookup(instance_id)
        if found is None:
            raise InstanceNotFoundError(f"no e2b instance {instance_id!r}", op="lookup")
        sandbox_id = found[0]
        with translated("status", instance_id):
            info = await AsyncSandbox.get_info(sandbox_id, **self._params())
        return info_of(instance_id, sandbox_id, info.metadata, status_of(info.state))

    async def _list(self) -> list[InstanceInfo]:
        rows = await self._find({LABEL_PROVIDER: self.name})
        return [
            info_of(row.metadata.get(LABEL_INSTANCE, ""), row.sandbox_id, row.metadata, status_of(row.state))
            for row in rows
        ]

    # ---- exec and files ----------------------------------------------------------------------

    async def _exec(self, instance_id: str, request: ExecRequest) -> ExecResult:
        sandbox = await self._sandbox(instance_id)
        cwd = self._path(instance_id, request.cwd or ".")
        return await beside(
            lambda: _exec.run(sandbox, instance_id, request, cwd, self._env_file(instance_id)),
            lambda: self._renewals.keep_alive(instance_id, sandbox),  # a busy instance stays
        )

    async def _read(self, instance_id: str, path: str) -> bytes:
        sandbox = await self._sandbox(instance_id)
        return await _files.read(sandbox, instance_id, self._path(instance_id, path))

    async def _write(self, instance_id: str, path: str, data: bytes) -> None:
        sandbox = await self._sandbox(instance_id)
        await _files.write(sandbox, instance_id, self._path(instance_id, path), data)

    async def _upload(self, instance_id: str, local: Path, remote: str) -> None:
        sandbox = await self._sandbox(instance_id)
        await _files.upload(sandbox, instance_id, local, self._path(instance_id, remote))

    async def _download(self, instance_id: str, remote: str, local: Path) -> None:
        sandbox = await self._sandbox(instance_id)
        await _files.download(sandbox, instance_id, self._path(instance_id, remote), local)

    @part(Capability.PTY)
    def terminals(self) -> E2BTerminals:
        """The SDK's own pty (``_pty``); what is typed or printed renews the sandbox."""
        return E2BTerminals(
            sandbox=self._sandbox, path=self._path, env_file=self._env_file, renewal=self._renewals.soon_for
        )

    def _path(self, instance_id: str, path: str) -> str:
        """``path`` in the sandbox: relative paths resolve against the instance's working dir."""
        workdir = self._metadata[instance_id].get(WORKDIR) or "/workspace"
        return posixpath.normpath(posixpath.join(workdir, path))

    # ---- the helper channel: background processes, sessions, bind_env -------------------------

    async def _channel_path(self, instance_id: str, path: str) -> str:
        await self._sandbox(instance_id)  # looked up (another process may have made it), renewed
        return self._path(instance_id, path)

    async def _open_channel(self, instance_id: str) -> Channel:
        await self._sandbox(instance_id)
        return await super()._open_channel(instance_id)

    def _transport(self, instance_id: str, argv: list[str]) -> Transport:
        """``argv`` as a long-lived envd process (blocking; see ``_channel``). What is sent to it
        renews the sandbox, and the instance's keeper renews while a session command runs."""
        from e2b import Sandbox

        sandbox = self._sync.get(instance_id)
        if sandbox is None:  # the async sandbox cannot serve a thread: connect a sync one, once
            metadata = self._metadata[instance_id]
            with translated("connect", instance_id):
                sandbox_id = self._sandboxes[instance_id].sandbox_id
                sandbox = Sandbox.connect(sandbox_id, timeout=renewal_s(metadata), **self._params())
            self._sync[instance_id] = sandbox
        self._renewals.keep(instance_id)
        return E2BTransport(sandbox, argv, lambda: self._renewals.soon(instance_id))

    async def _ping(self, instance_id: str) -> None:
        """Nothing: a transfer renews the sandbox itself (``_sandbox``). The helper's ping is for an
        instance that watches its own idleness (docker's watchdog); here it would cost an envd call."""

    def _env_file(self, instance_id: str) -> str:
        """Where ``bind_env`` keeps the bound env (native exec sources it too)."""
        return f"{self._spool(instance_id)}/env"

    @part(Capability.PROCESSES)
    def process_table(self) -> E2BProcesses:
        """The channel's, reading output from its spool file through envd (``_processes``)."""
        return E2BProcesses(self._channels, self._channel_cwd, self._sandbox, self._spool)
