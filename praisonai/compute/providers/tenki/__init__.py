"""Tenki compute: an instance is a Tenki sandbox (a microVM), driven through the official ``tenki``
SDK (1.4.x, cloud-sdks.md §4).

Identity: every sandbox carries the ``praisonai.*`` labels in its ``metadata`` (kept, returned,
but NOT filterable on Tenki) and two **tags**, which Tenki filters on and lowercases:
``praisonai-provider=tenki`` and ``praisonai-instance=<instance id>`` (our ids are lowercase, so
nothing is lost). Any process finds an instance with ``list(tags=[...])``; that is also how an
instance id is turned into the sandbox (one call, no local registry). A create that fails with
a rate limit or a server error is retried only after listing by the instance tag: a create whose
answer was lost is adopted, never doubled (Tenki documents no idempotency key).

Create: ``image`` (Tenki's default image when none), ``cpu_cores``/``memory_mb`` (rounded up,
memory even, as the API wants), ``env`` in the create call, ``max_duration`` for ``ttl_s``
(Tenki terminates at ``timeout_at``), ``allow_outbound=False`` for ``network: none``,
``allow_domains``/``allow_cidrs`` for an allowlist (create-time only on Tenki).
``idle_timeout_minutes`` is never sent: Tenki ignores it (a DeprecationWarning and no idle stop),
so idleness is our reaper's, like any provider without ``SELF_STOP`` (``env plan`` says
"emulated"). Shutdown is ``AsyncSandbox.close()``, which terminates; an already terminated or
unknown sandbox counts as "already gone" (``False``).

One ``AsyncClient`` is kept per event loop, with the handles it found (``_client.Held``): a handle
holds its data-plane credential, so after the first, a command costs one vendor call. Status and
listing always ask Tenki. Exec is the Run stream (``_exec``); files go through exec as bytes both
ways (``cat``, stdin in frames, tar for trees): Tenki's own fs API only reaches paths under
``/home/tenki`` and our working directory is anywhere. Background processes use the instance helper
one request per exec (``compute.oneshot``): a Run stream dies with its connection and the edge
drops idle streams after about 30 s, so it cannot carry a long-lived helper channel. No shell
sessions (same reason), no GPU (the API has none). Captures are Tenki snapshots named
``praisonai-<tag>`` (``_capture``). Pause is Tenki's own (``pause``/``resume``, memory and disk
kept, ``/tmp`` cleared on resume: see ``_pause``). No snapshots of a running instance
(``sb.snapshot``, ``fork``): a Tenki snapshot is of the whole microVM, its memory
(``memory_bytes``) included and with it the env values its processes hold, and ``CreateSnapshot``
has no filesystem-only mode (as E2B's has).

Commands run as the instance's command user, apart from root, which frames their results (every
Run is asked for privileged, and the command is started through ``setpriv``; see ``_exec`` and
``compute.separation``): files are read and written with that uid's rights by perl switching only its
effective uid, trees by ``tar`` as it, and background processes' spool is the root helper's.
"""

from __future__ import annotations

import contextlib
import ipaddress
import math
import posixpath
from collections.abc import AsyncIterator, Mapping
from typing import Any, ClassVar, Literal

from pydantic import SecretStr

from praisonai import _retry
from praisonai._errors import ExecError, InstanceNotFoundError
from praisonai._types import Capability, ExecRequest, ExecResult, InstanceInfo, InstanceStatus
from praisonai.compute import separation
from praisonai.compute.abilities import part
from praisonai.compute.base import ComputeProvider
from praisonai.compute.config import ComputeConfig, NetworkAllow
from praisonai.compute.lifecycle import LABEL_CREATED, LABEL_INSTANCE
from praisonai.compute.oneshot import OneShotProcesses
from praisonai.compute.options import ProviderOptions
from praisonai.compute.providers.tenki import _exec
from praisonai.compute.providers.tenki._capture import TenkiCapturer
from praisonai.compute.providers.tenki._client import (
    ATTEMPTS,
    Clients,
    is_retryable,
    missing_credentials,
    retried,
    translated,
)
from praisonai.compute.providers.tenki._files import TenkiFiles
from praisonai.compute.providers.tenki._pause import TenkiPauser

LABEL_WORKDIR = "praisonai.workdir"
TAG_PROVIDER = "praisonai-provider=tenki"
_GONE = ("TERMINATING", "TERMINATED", "USER_SHUTDOWN")
_STATES = {
    "RUNNING": InstanceStatus.RUNNING,
    "PAUSED": InstanceStatus.PAUSED,
    "PAUSING": InstanceStatus.PAUSED,
    "CREATING": InstanceStatus.PROVISIONING,
    "RESUMING": InstanceStatus.PROVISIONING,
}


def instance_tag(instance_id: str) -> str:
    return f"praisonai-instance={instance_id}".lower()


class TenkiOptions(ProviderOptions):
    """``TenkiCompute``'s options; ``None`` is read where the SDK reads it (``TENKI_API_KEY`` or
    ``TENKI_AUTH_TOKEN``, ``TENKI_API_ENDPOINT``)."""

    type: Literal["tenki"] = "tenki"
    api_key: SecretStr | None = None
    api_url: str | None = None
    image: str | None = None


class TenkiCompute(TenkiFiles, ComputeProvider):
    """Instances are Tenki sandboxes; see the module docstring."""

    name = "tenki"
    options_model = TenkiOptions
    requires = ("tenki",)
    extra = "tenki"
    capabilities = frozenset(
        {
            Capability.IMAGE,
            Capability.CPU_LIMIT,
            Capability.MEMORY_LIMIT,
            Capability.NETWORK_NONE,
            Capability.NETWORK_ALLOWLIST,
            Capability.ISOLATION,
        }
    )
    #: ``ttl`` is Tenki's ``max_duration``; ``idle_timeout`` is our reaper's (Tenki ignores its own).
    plan_notes: ClassVar[Mapping[str, tuple[str, str]]] = {
        "ttl": ("native", "Tenki's max_duration ends it then, even if this process dies"),
        "idle_timeout": (
            "emulated",
            "Tenki ignores its own idle setting: the reaper of a running praisonai process stops it",
        ),
    }

    def __init__(
        self, *, api_key: str | SecretStr | None = None, api_url: str | None = None, image: str | None = None
    ) -> None:
        self._options = TenkiOptions.parse({"api_key": api_key, "api_url": api_url, "image": image})
        self._clients = Clients(self._key(), self._options.api_url)

    @property
    def options(self) -> TenkiOptions:
        return self._options

    def unavailable_reason(self) -> str | None:
        return missing_credentials(self._key())

    def _key(self) -> str | None:
        key = self._options.api_key
        return None if key is None else key.get_secret_value()

    @part(Capability.CAPTURE)
    def capturer(self) -> TenkiCapturer:
        """Captures are Tenki snapshots named by the capture tag (``_capture``)."""
        return TenkiCapturer(sdk=self._sdk, sandbox=self._sandbox, start=self._start)

    def _sdk(self) -> Any:
        return self._clients.here().sdk

    async def _find(self, sdk: Any, instance_id: str, op: str) -> Any:
        """The live sandbox tagged with ``instance_id``, or ``None``."""
        found = await retried(op, lambda: sdk.list(tags=[TAG_PROVIDER, instance_tag(instance_id)]))
        live = [
            s for s in found if s.state not in _GONE and s.info.metadata.get(LABEL_INSTANCE) == instance_id
        ]
        return live[0] if live else None

    @contextlib.asynccontextmanager
    async def _sandbox(self, instance_id: str, op: str, *, fresh: bool = False) -> AsyncIterator[Any]:
        """The instance's ``AsyncSandbox``, held from a previous operation unless ``fresh``;
        unknown or terminated -> InstanceNotFoundError (and the held handle is dropped). A call
        (not ``fresh``: not a status, pause or resume) on a paused one resumes it first, keeping
        the ledger's state; a handle held while another process paused it fails once, then the
        next call finds it paused and resumes it."""
        held = self._clients.here()
        sandbox = None if fresh else held.boxes.get(instance_id)
        if sandbox is None:
            sandbox = await self._find(held.sdk, instance_id, op)
            if sandbox is None:
                held.boxes.pop(instance_id, None)
                raise InstanceNotFoundError(f"no Tenki sandbox for instance {instance_id!r}", op=op)
            held.boxes[instance_id] = sandbox
        if not fresh and sandbox.state in ("PAUSED", "PAUSING"):
            await self.resume(instance_id)
            sandbox = held.boxes[instance_id]  # the handle the resume found and woke
        try:
            yield sandbox
        except InstanceNotFoundError:
            held.boxes.pop(instance_id, None)  # terminated meanwhile (by its ttl, another process)
            raise

    # ---- lifecycle -------------------------------------------------------------------------

    async def _create(self, instance_id: str, cfg: ComputeConfig, labels: dict[str, str]) -> InstanceInfo:
        return await self._start(instance_id, cfg, labels, None)

    async def _start(
        self, instance_id: str, cfg: ComputeConfig, labels: dict[str, str], snapshot: str | None
    ) -> InstanceInfo:
        ttl = cfg.lifetime.ttl_s
        user = separation.command_user(cfg)
        kwargs: dict[str, Any] = dict(
            name=instance_id,
            image=None if snapshot else (cfg.image or self._options.image),
            snapshot_id=snapshot,
            cpu_cores=None if cfg.cpu is None else max(1, math.ceil(cfg.cpu)),
            memory_mb=None if cfg.memory_mb is None else max(128, 2 * math.ceil(cfg.memory_mb / 2)),
            env=dict(cfg.env),
            metadata={**separation.labelled(labels, user), LABEL_WORKDIR: cfg.working_dir},
            tags=[TAG_PROVIDER, instance_tag(instance_id)],
            max_duration=None if ttl is None else math.ceil(ttl),
            allow_outbound=cfg.network != "none",
            **_allow_lists(cfg),
        )
        held = self._clients.here()
        sandbox = await self._create_once(held.sdk, instance_id, kwargs)
        held.boxes[instance_id] = sandbox  # its data plane came with the create
        result = await self._raw(
            sandbox, separation.checked(user, _workdir_argv(cfg.working_dir, user)), None, "provision"
        )
        if separation.refused(user, result.exit_code, bytes(result.stderr).decode(errors="replace")):
            raise ExecError(separation.refusal(user or ""), op="provision")
        if result.exit_code != 0:
            raise ExecError(f"could not make {cfg.working_dir} in the sandbox", op="provision")
        return self._info(sandbox)

    async def _create_once(self, sdk: Any, instance_id: str, kwargs: dict[str, Any]) -> Any:
        """``create``, retried on a rate limit or a server error only once a listing by the
        instance tag shows the failed attempt made nothing (a lost answer is adopted)."""
        with translated("provision", instance_id=instance_id):
            return await _retry.retried(
                lambda: sdk.create(**kwargs),
                retry_if=is_retryable,
                attempts=ATTEMPTS,
                what="tenki create",
                adopt=lambda: self._find(sdk, instance_id, "provision"),
            )

    async def _destroy(self, instance_id: str) -> bool:
        held = self._clients.here()
        sandbox = held.boxes.pop(instance_id, None) or await self._find(held.sdk, instance_id, "shutdown")
        if sandbox is None:
            return False
        try:
            await retried("shutdown", sandbox.close)  # close() TERMINATES: that is the point here
        except InstanceNotFoundError:
            return False  # already terminated (Tenki's second terminate is "already terminated")
        return True

    @part(Capability.PAUSE)
    def pauser(self) -> TenkiPauser:
        return TenkiPauser(lambda instance_id, op: self._sandbox(instance_id, op, fresh=True), self._info)

    async def _status(self, instance_id: str) -> InstanceInfo:
        async with self._sandbox(instance_id, "status", fresh=True) as sandbox:
            return self._info(sandbox)

    async def _list(self) -> list[InstanceInfo]:
        sdk = self._sdk()
        found = await retried("list", lambda: sdk.list(tags=[TAG_PROVIDER]))
        return [self._info(s) for s in found if s.state not in _GONE and LABEL_INSTANCE in s.info.metadata]

    def _info(self, sandbox: Any) -> InstanceInfo:
        labels = dict(sandbox.info.metadata)
        return InstanceInfo(
            instance_id=labels[LABEL_INSTANCE],
            provider=self.name,
            status=_STATES.get(sandbox.state, InstanceStatus.ERROR),
            endpoint=f"tenki://{sandbox.id}",
            created_at=float(labels.get(LABEL_CREATED, 0)),
            labels={k: v for k, v in labels.items() if k != LABEL_WORKDIR},
            metadata={
                "sandbox_id": sandbox.id,
                "state": sandbox.state,
                "working_dir": labels.get(LABEL_WORKDIR, "/"),
                "tags": ",".join(sandbox.info.tags),
            },
        )

    # ---- exec and files ----------------------------------------------------------------------

    def _path(self, sandbox: Any, path: str) -> str:
        return posixpath.normpath(posixpath.join(sandbox.info.metadata.get(LABEL_WORKDIR, "/"), path))

    @part(Capability.PROCESSES)
    def process_table(self) -> OneShotProcesses:
        """Background processes: one helper run per request through ``_exec`` (``compute.oneshot``)."""
        return OneShotProcesses(self.name, self._exec, self._read_spool, self._command_user)

    async def _command_user(self, instance_id: str) -> str | None:
        async with self._sandbox(instance_id, "exec") as sandbox:
            return self._user(sandbox)

    async def _exec(self, instance_id: str, request: ExecRequest) -> ExecResult:
        async with self._sandbox(instance_id, "exec") as sandbox:
            user = None if request.privileged else self._user(sandbox)
            return await _exec.run(
                sandbox, request, self._path(sandbox, request.cwd or "."), instance_id, user
            )

    async def _after_setup(self, instance_id: str) -> None:
        """What packages and setup (root's) made in the working dir is the commands' uid's."""
        async with self._sandbox(instance_id, "provision") as sandbox:
            user, workdir = self._user(sandbox), self._path(sandbox, ".")
        if user is not None:
            await separation.hand_over(self, instance_id, workdir, user, "provision")

    async def _raw(self, sandbox: Any, argv: list[str], data: bytes | None, op: str) -> Any:
        """``argv`` with ``data`` on stdin, as root; the SDK's ``CommandResult`` (bytes, binary-safe)."""
        iid = sandbox.info.metadata.get(LABEL_INSTANCE)
        with translated(op, instance_id=iid):
            proc = await sandbox.start(*argv, cwd="/", privileged=True)
            await _exec.feed(proc, data)
            return await proc.wait()


def _workdir_argv(working_dir: str, user: str | None) -> list[str]:
    """Make the working dir; with a command user, give it that dir when root owns it (but /)."""
    if user is None:
        return ["mkdir", "-p", "--", working_dir]
    give = '[ "$(cd -- "$1" && pwd)" = / ] || [ -z "$(find "$1" -maxdepth 0 -user 0)" ] || chown "$2" "$1"'
    return ["sh", "-c", f'mkdir -p -- "$1" && {{ {give}; }}', "sh", working_dir, user]


def _allow_lists(cfg: ComputeConfig) -> dict[str, list[str]]:
    """``network: {allow: [...]}`` as Tenki's two lists: addresses and CIDRs to ``allow_cidrs``,
    host names (``*.example.org`` too) to ``allow_domains``."""
    if not isinstance(cfg.network, NetworkAllow):
        return {}
    cidrs, domains = [], []
    for host in cfg.network.allow:
        try:
            cidrs.append(str(ipaddress.ip_network(host, strict=False)))
        except ValueError:
            domains.append(host)
    return {"allow_cidrs": cidrs, "allow_domains": domains}
