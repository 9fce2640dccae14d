"""A session's instance: made through the one provisioning path, recorded as data in the session,
reattached from any process, or replaced (and announced) when it is gone.

The session holds a *reference*: ``{"provider", "options", "instance_id", "config", "environment"}``
(the provider's options record, secrets left out, as the ledger keeps them; the explicit compute
fields; which environment file was read). The instance itself follows its idle policy: nothing
here keeps it alive, and closing a ManagedAgent leaves it running for the next turn or process.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread

from praisonai import _telemetry
from praisonai._errors import ConfigError, InstanceNotFoundError
from praisonai._ledger import Ledger
from praisonai._types import InstanceStatus
from praisonai.compute.base import ComputeProvider
from praisonai.compute.config import ComputeConfig
from praisonai.compute.foreign import ForeignProvider
from praisonai.compute.registry import compute_provider, provider_for_record
from praisonai.compute.workspace import Place, Resource, prepare, resources
from praisonai.managed.events import Event
from praisonai.sandbox import AsyncSandbox
from praisonai.sandbox.provisioning import ProvisionPlan, plan

#: What a replaced instance loses and what the session keeps (told to the model).
LOST = ("workspace files", "installed packages", "running processes", "shell state")
KEPT = ("the transcript",)
REPLACED_NOTE = (
    "Note: the remote instance your tools run on was lost and replaced by a fresh one. Files you "
    "wrote in the workspace, packages you installed by hand and running processes are gone; the "
    "environment's own packages and setup are there again. Check the state before relying on it."
)

log = _telemetry.logger("managed")


@dataclass(frozen=True)
class InstanceSource:
    """Where a session's instances come from: the compute, the explicit fields, the environment file."""

    compute: object
    fields: Mapping[str, Any]
    environment: str | os.PathLike[str] | bool | None
    #: Put in each instance made (the config's ``resources``), a replacement's too.
    resources: tuple[Resource, ...] = ()

    async def check(self) -> None:
        """Refuse now what :meth:`provision` would refuse later, making nothing: the provider
        resolves (never to unisolated host execution by default), it honours the fields
        (packages, …), and the ledger opens."""
        chosen = await self._plan()
        chosen.provider.check_supported(chosen.config)
        await anyio.to_thread.run_sync(Ledger.default().entries)

    async def provision(self) -> tuple[AsyncSandbox, dict[str, Any], Event]:
        """A new instance, its reference for the session, and the ``sandbox.provisioned`` event."""
        chosen = await self._plan()
        sandbox = await AsyncSandbox.from_plan(chosen)
        try:  # an instance whose upload or clone failed is never handed out
            await prepare(Place(sandbox.provider, sandbox.id), self.resources)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await sandbox.shutdown()
            raise
        sandbox.owned = False  # the session references it; the idle policy ends it
        source = str(chosen.source) if chosen.source is not None else False
        reference = _reference(sandbox.provider, sandbox.id, self.fields, source, chosen.config.working_dir)
        reference["resources"] = [r.model_dump(mode="json") for r in self.resources]  # names, no secret
        return sandbox, reference, Event("sandbox.provisioned", _public(reference))

    async def _plan(self) -> ProvisionPlan:
        return await anyio.to_thread.run_sync(
            functools.partial(plan, self.compute, dict(self.fields), environment=self.environment)
        )


def provider_of(reference: Mapping[str, Any], known: object = None) -> ComputeProvider:
    """The provider that made the recorded instance: ``known`` when it is that very provider (a
    resumed session's own compute is), else one rebuilt from the record."""
    options = reference.get("options") or {}
    if reference["provider"] == ForeignProvider.name:
        return _foreign(known, str(reference.get("object", "")))
    if (
        isinstance(known, ComputeProvider)
        and known.provider_name == reference["provider"]
        and known.options.to_record() == options
    ):
        return known
    return provider_for_record(str(reference["provider"]), options)


def source_of(reference: Mapping[str, Any], env: Mapping[str, str], known: object = None) -> InstanceSource:
    """The source a recorded reference was made from (to make a replacement alike), with the
    values of its variables from ``env`` (the reference keeps their names only)."""
    provider = provider_of(reference, known)
    fields = {
        **(reference.get("config") or {}),
        "env": {k: v for k, v in env.items() if k in reference.get("env", ())},
    }
    kept = resources(reference.get("resources") or ())
    return InstanceSource(provider, fields, reference.get("environment", False), kept)


async def reattach(reference: Mapping[str, Any], known: object = None) -> tuple[AsyncSandbox, Event] | None:
    """The recorded instance if it still exists (from any process) and its event: running,
    ``sandbox.reattached``; paused (kept across idle), resumed with its files and
    ``sandbox.resumed``. ``None`` when it is gone. ``known``: as for :func:`provider_of`.

    Raises:
        ConfigError, UnknownProviderError, MissingDependencyError: the provider cannot be rebuilt.
    """
    provider = provider_of(reference, known)
    instance_id = str(reference["instance_id"])
    try:
        info = await provider.get_status(instance_id)
    except InstanceNotFoundError:
        return None
    except ValueError as exc:  # a recorded id the provider rejects: treat the row as corrupt
        raise ConfigError(f"the session's recorded instance is unusable: {exc}", op="resume") from exc
    kind = "sandbox.reattached"
    if info.status is InstanceStatus.PAUSED:
        try:
            info, kind = await provider.resume(instance_id), "sandbox.resumed"
        except InstanceNotFoundError:  # past its ttl, removed: replaced like a lost one
            return None
    if info.status not in (InstanceStatus.RUNNING, InstanceStatus.IDLE):
        await provider.shutdown(instance_id)  # stopped or broken: clear it away before replacing it
        return None
    log.info("%s %s", "resumed" if kind == "sandbox.resumed" else "reattached", instance_id)
    return AsyncSandbox(provider, info, owned=False), Event(kind, {**_public_of(provider, instance_id)})


def _public_of(provider: ComputeProvider, instance_id: str) -> dict[str, str]:
    return {"provider": provider.provider_name, "instance_id": instance_id}


async def alive(sandbox: AsyncSandbox) -> bool:
    """Whether the instance still runs (its idle policy may have stopped it since it was used);
    a paused one is resumed; one that stopped but still exists is removed, to be replaced."""
    try:
        info = await sandbox.provider.get_status(sandbox.id)
    except InstanceNotFoundError:
        return False
    if info.status is InstanceStatus.PAUSED:
        info = await sandbox.provider.resume(sandbox.id)
    if info.status in (InstanceStatus.RUNNING, InstanceStatus.IDLE):
        return True
    await sandbox.provider.shutdown(sandbox.id)
    return False


async def replace(
    reference: Mapping[str, Any], env: Mapping[str, str], known: object = None
) -> tuple[AsyncSandbox, dict[str, Any], Event]:
    """A new instance made like the lost one (from the capture when the definition has one);
    ``env``: the values of its variables, from this process; ``known``: as for :func:`provider_of`."""
    sandbox, new, _ = await source_of(reference, env, known).provision()
    announced = {
        **_public(new),
        "previous_instance_id": reference.get("instance_id"),
        "lost": list(LOST),
        "kept": list(KEPT),
    }
    log.info("replaced %s (gone) with %s", reference.get("instance_id"), sandbox.id)
    return sandbox, new, Event("sandbox.replaced", announced)


def _reference(
    provider: ComputeProvider,
    instance_id: str,
    fields: Mapping[str, Any],
    environment: str | bool,
    working_dir: str,
) -> dict[str, Any]:
    return {
        **_recorded(provider),
        "instance_id": instance_id,
        "config": {k: v for k, v in fields.items() if k != "env"},  # values may be secrets
        "env": sorted(fields.get("env") or {}),
        "environment": environment,
        "working_dir": working_dir,
    }


def working_dir(reference: Mapping[str, Any]) -> str:
    """The instance's working directory (the effective config's, recorded when it was made)."""
    return str(reference.get("working_dir") or ComputeConfig().working_dir)


def _public(reference: Mapping[str, Any]) -> dict[str, Any]:
    """What an event says about an instance (no options, which may name hosts and users)."""
    return {"provider": reference["provider"], "instance_id": reference["instance_id"]}


def compute_record(compute: object) -> dict[str, Any] | None:
    """The compute a session was given, as data for its row (``None``: the default, chosen when
    the first instance is made), so a resume in another process uses the same. A provider object
    written to PraisonAI's protocol is recorded by its name only: it must be given again."""
    return None if compute is None else _recorded(compute_provider(compute))


def _recorded(provider: ComputeProvider) -> dict[str, Any]:
    if isinstance(provider, ForeignProvider):  # the object lives in this process alone
        return {"provider": ForeignProvider.name, "object": provider.provider_name}
    return {"provider": provider.provider_name, "options": provider.options.to_record()}


def compute_from(record: object) -> ComputeProvider | None:
    """The inverse of :func:`compute_record`.

    Raises:
        ConfigError: the session ran on a provider object, which no other process can rebuild.
    """
    if not isinstance(record, Mapping):
        return None
    if record.get("provider") == ForeignProvider.name:
        return _foreign(None, str(record.get("object", "")))
    return provider_for_record(str(record["provider"]), record.get("options") or {})


def _foreign(known: object, shown: str) -> ForeignProvider:
    """The adapter of ``known``, the provider object a session was given (recorded as ``shown``):
    no other process can rebuild it by name, so it must be given again.

    Raises:
        ConfigError: ``known`` is no provider object written to PraisonAI's protocol.
    """
    if known is not None and not isinstance(known, str | Mapping | ComputeProvider):
        provider = compute_provider(known)
        if isinstance(provider, ForeignProvider):
            return provider
    raise ConfigError(
        f"this session ran on your own provider object ({shown}), which cannot be rebuilt here: "
        "pass it again as compute= to resume",
        op="resume",
    )
