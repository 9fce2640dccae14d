"""The instance ``sandbox run`` and ``sandbox create`` make: their options and the environment
file (read once) planned into a provider and a config, with what was chosen said on stderr."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from praisonai._errors import ConfigError
from praisonai.cli import _output
from praisonai.cli.sandbox._running import parse_env

if TYPE_CHECKING:
    from praisonai.compute.base import ComputeProvider
    from praisonai.sandbox.provisioning import ProvisionPlan

#: What the stderr line says when the default fell back to plain local.
UNISOLATED = "on this host, NOT isolated: install docker or bubblewrap to isolate"


def planned(
    compute: str | ComputeProvider | None,
    image: str | None,
    env: list[str] | None,
    environment: Path | None,
    no_environment: bool,
    allow_host_mounts: bool,
) -> ProvisionPlan:
    """The plan for the options (``--image`` and ``--env`` win over the file); says on stderr
    which environment file was read and, without ``--compute``, which provider was chosen
    (``compute`` may be a provider: a snapshot's, or the one running an instance to fork).

    Raises:
        ConfigError: options that exclude each other or do not fit the provider, or a bad file.
    """
    if environment is not None and no_environment:
        raise ConfigError("--environment and --no-environment exclude each other")
    fields: dict[str, object] = {"env": parse_env(env or [])}
    if image:
        fields["image"] = image
    if allow_host_mounts:
        fields["allow_host_mounts"] = True
    from praisonai.sandbox.provisioning import plan

    chosen = plan(compute, environment=False if no_environment else environment, resolve=_resolve, **fields)
    if chosen.source is not None:
        from praisonai.sandbox.environment import shown_path  # with the file's parser: only if read

        shown, definition = shown_path(chosen.source), chosen.config.definition_hash()
        _output.note(f"environment: {shown} (definition {definition})")
    if compute is None:
        _output.note(f"compute: {_chosen_by_default(chosen.provider, chosen.backend)}")
    return chosen


def _resolve(name: object) -> ComputeProvider:
    """The provider named, imported only when a run needs one. ``None``: the default, which a
    person typing a command may take on this host, unisolated, when nothing isolates here (said
    on stderr: see :func:`_chosen_by_default`); the library refuses that."""
    from praisonai.compute.registry import default_compute, resolve_compute

    return default_compute(host=True) if name is None else resolve_compute(name)


def _chosen_by_default(provider: ComputeProvider, backend: str | None) -> str:
    """The provider as the ``compute:`` line names it when no --compute was given: its flavour
    (``local (bubblewrap)``), or plainly that it runs on this host, not isolated."""
    from praisonai.compute.registry import isolates, shown_name

    if backend:
        return f"{shown_name(provider)} (backend from the environment file)"
    return shown_name(provider) if isolates(provider) else f"{provider.provider_name} ({UNISOLATED})"
