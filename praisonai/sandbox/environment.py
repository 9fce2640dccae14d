"""``.praisonai/environment.yaml``: the environment a repository declares, and the one place where it
meets the caller's own arguments.

Every path that provisions (``Sandbox.create``, SharedCompute, ``praisonai sandbox run``,
``praisonai env build``, and later ManagedAgent) goes through
:func:`praisonai.sandbox.provisioning.plan`, which calls :func:`effective_config`, so they all read
the file the same way.

**Precedence**: explicit arguments > the file > defaults. "Explicit" means the fields the caller
actually set (a dict's keys, a ``ComputeConfig``'s ``model_fields_set``, ``Sandbox.create``'s
keyword fields), even when set to ``None``. Merging:

- ``env`` merges key by key; the explicit value wins on the same key;
- ``packages`` merge per manager: the file's list, then the explicit additions, duplicates dropped;
- every other field is replaced by the explicit value when one is given.

The file's ``backend`` names the provider only when the caller names none. A field the chosen
provider cannot honour is refused at provisioning (``ComputeProvider.check_supported``), never
dropped. The schema (every key optional; see ``_envmodel``)::

    image: python:3.12
    packages: {pip: ["requests>=2"], apt: [jq], npm: []}
    setup: [make deps]              # once, after packages; then captured where the provider can
    refresh: git pull               # instead of packages+setup when starting from a capture
    env: {MODE: ci, PORT: 8080}     # scalars become strings as spelled
    resources: {cpu: 2, memory_mb: 2048, gpu: 1, disk: 4096}   # disk in MiB
    network: none                   # or unrestricted, or {allow: [pypi.org]}
    backend: docker
    runtime: runsc                  # gVisor (checked at start; never a fallback to runc), or runc
    working_dir: /workspace
    mount_paths: ["/data:/data:ro"]
    idle_timeout: 600               # seconds
    ttl: 3600                       # seconds
    setup_timeout: 900              # seconds each package install or setup/refresh command may take
    capture: true                   # a YAML boolean; "false" in quotes is an error
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from praisonai._errors import EnvironmentFileError
from praisonai._lazy import lazy_exports
from praisonai.compute.config import ComputeConfig
from praisonai.compute.hostmounts import OPT_IN, host_mount_refusal

# The file's parser and models (PyYAML, the definition's pydantic models) load when a file is
# read or one of their names is first asked for: a run that reads no file never needs them.
if TYPE_CHECKING:
    from praisonai.sandbox._envfile import shown_path as shown_path
    from praisonai.sandbox._envmodel import EnvironmentDefinition as EnvironmentDefinition

__all__ = [
    "ENVIRONMENT_FILE",
    "EffectiveConfig",
    "EnvironmentDefinition",
    "effective_config",
    "explicit_fields",
    "find_environment_file",
    "load_environment_file",
    "merge_fields",
    "shown_path",
]

#: Where a repository declares its environment, relative to a directory on the search path.
ENVIRONMENT_FILE = Path(".praisonai") / "environment.yaml"


@dataclasses.dataclass(frozen=True, slots=True)
class EffectiveConfig:
    """What to provision: the config after precedence, the file it read (``None``: no file), the
    provider the file names (``None``: none named), and the parsed file itself."""

    config: ComputeConfig
    source: Path | None
    backend: str | None
    definition: EnvironmentDefinition | None = None


def find_environment_file(start: str | os.PathLike[str] | None = None) -> Path | None:
    """The nearest ``.praisonai/environment.yaml`` from ``start`` (default: the working directory).

    Inside a repository the search walks up to the repository root (the nearest directory holding
    ``.git``, a directory or a worktree's file) and never above it, so a stray file in a parent
    directory is never picked up. Outside any repository only ``start`` itself is searched.
    Returns an absolute path, or ``None`` when there is no file.
    """
    here = Path(start if start is not None else os.getcwd()).resolve()
    for directory in _search_path(here):
        candidate = directory / ENVIRONMENT_FILE
        if candidate.exists() and not candidate.is_dir():  # a FIFO is found, and refused when read
            return candidate
    return None


def load_environment_file(path: str | os.PathLike[str]) -> EnvironmentDefinition:
    """Read and validate one file. An empty file is the empty definition.

    Raises:
        EnvironmentFileError (ConfigError): the file is missing, unreadable, not YAML or not a
            valid definition; the message lists every problem as ``file:line: key: what is allowed``.
    """
    from praisonai.sandbox._envfile import parse_file

    return parse_file(Path(path))


def effective_config(
    explicit: object = None,
    *,
    start: str | os.PathLike[str] | None = None,
    path: str | os.PathLike[str] | None = None,
    use_file: bool = True,
) -> EffectiveConfig:
    """The config to provision: ``explicit`` over the environment file over defaults (see the
    module docstring for the merge rule).

    ``explicit``: ``None``, a dict, a ``ComputeConfig`` or a config object from PraisonAI's SDK;
    only the fields it sets count. ``path`` reads that file; otherwise the file is found from
    ``start`` (default: the working directory) by :func:`find_environment_file`. With
    ``use_file=False`` no file is read.

    Raises:
        ConfigError: ``explicit`` is invalid.
        EnvironmentFileError (ConfigError): the file is invalid, or ``path`` names no file.
    """
    given = explicit_fields(explicit)
    source = _source(start, path) if use_file else None
    if source is None:
        return EffectiveConfig(ComputeConfig.coerce(given), None, None)
    from praisonai.sandbox._envfile import parse_file

    definition = parse_file(source)
    merged = merge_fields(definition.config_fields(), given)
    if "mount_paths" not in given and not merged.get("allow_host_mounts"):
        _check_host_mounts(source, definition.mount_paths or [])
    return EffectiveConfig(ComputeConfig.coerce(merged), source, definition.backend, definition)


def explicit_fields(explicit: object) -> dict[str, Any]:
    """The fields a caller set, validated, as ``ComputeConfig`` keyword arguments.

    Raises:
        ConfigError: a value is invalid.
    """
    if explicit is None:
        return {}
    config = ComputeConfig.coerce(explicit)
    return config.model_dump(include=set(config.model_fields_set))


def merge_fields(base: Mapping[str, Any], explicit: Mapping[str, Any]) -> dict[str, Any]:
    """``explicit`` over ``base`` (both ``ComputeConfig`` keyword arguments): ``env`` key by key,
    ``packages`` per manager (base's names, then explicit additions, duplicates dropped), every
    other field replaced."""
    merged = {**base, **explicit}
    if "env" in base and "env" in explicit:
        merged["env"] = {**base["env"], **explicit["env"]}
    if "packages" in base and "packages" in explicit:
        ours, theirs = base["packages"], explicit["packages"]
        merged["packages"] = {m: _unique([*ours.get(m, []), *theirs.get(m, [])]) for m in {**ours, **theirs}}
    return merged


def _check_host_mounts(source: Path, mounts: list[str]) -> None:
    """Refuse the file's mounts of the engine's socket, ``/`` and host system directories: the
    caller opts in with ``allow_host_mounts`` (``praisonai.compute.hostmounts``), the file cannot."""
    from praisonai.sandbox import _envfile

    for position, spec in enumerate(mounts):
        why = host_mount_refusal(spec.split(":")[0])
        if why:
            problem = f"mount_paths[{position}]: {why}; remove it from the file, or {OPT_IN}"
            raise EnvironmentFileError(source, [f"{_envfile.shown_path(source)}: {problem}"])


def _search_path(start: Path) -> list[Path]:
    """``start`` and its parents up to the repository root, or just ``start`` outside a repository."""
    chain = [start, *start.parents]
    for depth, directory in enumerate(chain):
        if (directory / ".git").exists():
            return chain[: depth + 1]
    return [start]


def _source(start: str | os.PathLike[str] | None, path: str | os.PathLike[str] | None) -> Path | None:
    """The file to read: ``path`` as given (reading it reports a missing one), or the one found."""
    return Path(path) if path is not None else find_environment_file(start)


def _unique(names: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(names))


__getattr__ = lazy_exports(
    __name__,
    {"EnvironmentDefinition": "praisonai.sandbox._envmodel", "shown_path": "praisonai.sandbox._envfile"},
)
