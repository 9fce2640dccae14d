"""The compute bridge: names, aliases, objects, and the errors for everything else."""

from __future__ import annotations

import importlib.util

import pytest

from praisonai import MissingDependencyError, UnknownProviderError, available_providers, resolve_compute
from praisonai.compute.providers.local import LocalCompute


def test_builtins_are_registered_by_entry_point() -> None:
    assert {"docker", "local"} <= set(available_providers())


def test_names_and_aliases_resolve() -> None:
    assert isinstance(resolve_compute("local"), LocalCompute)
    assert isinstance(resolve_compute(" Subprocess "), LocalCompute)


def test_unknown_name_lists_the_available_ones() -> None:
    with pytest.raises(UnknownProviderError, match=r"available: .*docker.*local") as info:
        resolve_compute("nope")
    assert isinstance(info.value, ValueError)


def test_an_instance_passes_through_and_junk_is_a_type_error() -> None:
    provider = LocalCompute()
    assert resolve_compute(provider) is provider
    with pytest.raises(TypeError):
        resolve_compute(42)


def test_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "docker" else real(name, *a)
    )
    with pytest.raises(MissingDependencyError, match=r"pip install 'praisonai\[docker\]'") as info:
        resolve_compute("docker")
    assert isinstance(info.value, ImportError)


def test_a_provider_whose_package_cannot_be_imported_is_one_sentence_not_a_crash(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from importlib.metadata import EntryPoint

    from praisonai.compute import entry_points, registry

    ghost = EntryPoint("ghost", "praisonai_no_such_package.provider:GhostCompute", entry_points.GROUP)
    real = entry_points.all_entry_points()
    monkeypatch.setattr(entry_points, "all_entry_points", lambda: {**real, "ghost": ghost})
    with pytest.raises(MissingDependencyError, match=r"ghost provider .* cannot be loaded"):
        registry.resolve_compute("ghost")
    (status,) = [s for s in registry.provider_statuses() if s.name == "ghost"]
    assert not status.installed
