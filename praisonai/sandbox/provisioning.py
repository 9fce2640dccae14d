"""The one provisioning path: find ``.praisonai/environment.yaml``, merge the caller's arguments over
it (explicit wins), pick the provider, provision.

Every caller goes through here: ``AsyncSandbox.create`` / ``Sandbox.create``, ``SharedCompute``,
``praisonai sandbox run`` and ``praisonai env build``. :func:`plan` takes the first three steps and
makes nothing, so a caller can show or check the result (``sandbox run`` decides from it whether
a one-shot run fits); ``AsyncSandbox.from_plan`` provisions it. ``create`` is the two in one::

    p = plan("docker", image="python:3.12")       # reads the file, merges, resolves the provider
    print(p.source, p.config.definition_hash())
    async with await AsyncSandbox.from_plan(p) as sb:
        ...
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from praisonai._errors import ConfigError
from praisonai.compute.base import ComputeProvider
from praisonai.compute.config import ComputeConfig
from praisonai.compute.registry import compute_provider
from praisonai.sandbox.environment import effective_config

if TYPE_CHECKING:  # parsed only when a file is read (see environment)
    from praisonai.sandbox.environment import EnvironmentDefinition

__all__ = ["ProvisionPlan", "plan"]


@dataclass(frozen=True, slots=True)
class ProvisionPlan:
    """What a provision will make: the ``provider`` chosen, the effective ``config`` (explicit
    arguments over the environment file over defaults), the file read (``source``; ``None``: no
    file) and its parsed ``definition``."""

    provider: ComputeProvider
    config: ComputeConfig
    source: Path | None = None
    definition: EnvironmentDefinition | None = None

    @property
    def backend(self) -> str | None:
        """The provider the file names (used only when the caller names none)."""
        return self.definition.backend if self.definition is not None else None


def plan(
    compute: object = None,
    config: object = None,
    *,
    environment: str | os.PathLike[str] | bool | None = None,
    resolve: Callable[[object], ComputeProvider] | None = None,
    **fields: Any,
) -> ProvisionPlan:
    """Read the environment file, merge, and pick the provider; nothing is provisioned.

    ``compute``: a name, a provider (ours, or an object written to PraisonAI's protocol, which is
    wrapped), or ``None`` (the file's ``backend`` when it names one, else
    the default: docker when available, else local under bubblewrap, else a refusal; the CLI's
    ``resolve`` may fall back to the host). ``config`` (a dict, a ``ComputeConfig`` or a
    config object from PraisonAI's SDK) and ``fields`` are the explicit fields, ``fields`` winning;
    only the fields they set count, and they win over the file (``env`` merges key by key and
    ``packages`` per manager: see :func:`praisonai.sandbox.environment.effective_config`).
    ``environment``: ``None`` (or ``True``) reads the file found from the working directory, a path
    reads that file, ``False`` reads none. ``resolve`` turns the provider's name (or ``None``)
    into a provider (default :func:`~praisonai.compute.registry.compute_provider`); the CLI uses it
    to prepare an SDK before the provider loads it. Blocking (it stats directories and may ask
    whether docker answers): async callers run it in a worker thread.

    Raises:
        EnvironmentFileError (ConfigError): the environment file is invalid.
        ConfigError: ``config``, ``fields`` or ``environment`` is invalid.
        UnknownProviderError, MissingDependencyError, ProviderUnavailableError: as ``compute_provider``.
    """
    if not isinstance(environment, str | os.PathLike | bool | type(None)):
        raise ConfigError(
            f"environment must be a path, True, False or None, not {type(environment).__name__}",
            op="environment",
        )
    given = ComputeConfig.coerce(config)
    explicit = {**given.model_dump(include=set(given.model_fields_set)), **fields}
    path = None if isinstance(environment, bool) else environment
    effective = effective_config(explicit, path=path, use_file=environment is not False)
    provider = (resolve or compute_provider)(compute if compute is not None else effective.backend)
    return ProvisionPlan(provider, effective.config, effective.source, effective.definition)
