"""Where provider names lead: the entry-point group ``praisonai.compute``, read without importing
any provider (the registry builds on it; the home's reaper reads a row's provider class here, as
it must not import the registry, which leads back to it through the providers' base)."""

from __future__ import annotations

import functools
from importlib.metadata import EntryPoint, PackageNotFoundError, distribution, entry_points

GROUP = "praisonai.compute"
#: Other spellings users reach for, mapped to the registered name.
ALIASES = {"subprocess": "local", "host": "local", "container": "docker"}


def canonical(name: str) -> str:
    """``name`` as the registry keys it: trimmed, lower case, an alias resolved."""
    key = name.strip().lower()
    return ALIASES.get(key, key)


def entry_point(name: str) -> EntryPoint | None:
    """The entry point of the provider ``name`` (an alias too), or ``None``: praisonai's own names
    first (no scan of every installed distribution), then any package's."""
    key = canonical(name)
    return own_entry_points().get(key) or all_entry_points().get(key)


@functools.cache
def all_entry_points() -> dict[str, EntryPoint]:
    """Every installed distribution's providers, by name."""
    return {ep.name: ep for ep in entry_points(group=GROUP)}


@functools.cache
def own_entry_points() -> dict[str, EntryPoint]:
    """The providers praisonai's own distribution declares. Found without reading the metadata of
    every installed distribution, which :func:`all_entry_points` does (milliseconds per hundred
    packages, on every start of a process that names a built-in provider)."""
    try:
        declared = distribution("praisonai").entry_points
    except PackageNotFoundError:  # run from a checkout that was never installed
        return {}
    return {ep.name: ep for ep in declared if ep.group == GROUP}
