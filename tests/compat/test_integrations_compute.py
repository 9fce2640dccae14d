"""PraisonAI's import paths for its compute providers work under our name, as its users (and its
own test_compute_home.py) write them: ``from praisonai.integrations.compute import E2BCompute``,
``praisonai.integrations.compute.docker`` being the very module that defines ``DockerCompute``."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from praisonai._errors import MissingDependencyError

REPO = Path(__file__).resolve().parents[2]
#: PraisonAI's class name -> (our provider module, our class name, its SDK, its extra)
NAMES = {
    "LocalCompute": ("praisonai.compute.providers.local", "LocalCompute", None, None),
    "DockerCompute": ("praisonai.compute.providers.docker", "DockerCompute", "docker", "docker"),
    "E2BCompute": ("praisonai.compute.providers.e2b", "E2BCompute", "e2b", "e2b"),
    "ModalCompute": ("praisonai.compute.providers.modal", "ModalCompute", "modal", "modal"),
    "DaytonaCompute": ("praisonai.compute.providers.daytona", "DaytonaCompute", "daytona", "daytona"),
    "FlyioCompute": ("praisonai.compute.providers.flyio", "FlyCompute", "httpx", "flyio"),
    "TenkiCompute": ("praisonai.compute.providers.tenki", "TenkiCompute", "tenki", "tenki"),
}
#: PraisonAI's module path -> (our provider module, PraisonAI's class name)
MODULES = {
    "praisonai.integrations.compute.local": ("praisonai.compute.providers.local", "LocalCompute"),
    "praisonai.integrations.compute.docker": ("praisonai.compute.providers.docker", "DockerCompute"),
    "praisonai.integrations.compute.e2b": ("praisonai.compute.providers.e2b", "E2BCompute"),
    "praisonai.integrations.compute.modal_compute": ("praisonai.compute.providers.modal", "ModalCompute"),
    "praisonai.integrations.compute.daytona": ("praisonai.compute.providers.daytona", "DaytonaCompute"),
    "praisonai.integrations.compute.flyio": ("praisonai.compute.providers.flyio", "FlyioCompute"),
    "praisonai.integrations.compute.tenki": ("praisonai.compute.providers.tenki", "TenkiCompute"),
}
SDKS = ("docker", "e2b", "modal", "daytona", "tenki", "kubernetes", "httpx", "paramiko")


@pytest.mark.parametrize("name", sorted(NAMES))
def test_each_praisonai_name_is_our_provider(name: str) -> None:
    import praisonai.integrations.compute as compute

    module, ours, _sdk, _extra = NAMES[name]
    assert name in compute.__all__
    assert getattr(compute, name) is getattr(importlib.import_module(module), ours)


@pytest.mark.parametrize("old_path", sorted(MODULES))
def test_the_old_module_path_is_the_same_module_not_a_copy(old_path: str) -> None:
    """As PraisonAI's test_compute_home.py asserts of its own shims."""
    new_path, name = MODULES[old_path]
    old = importlib.import_module(old_path)
    assert old is importlib.import_module(new_path), "the shim is a copy; patches through it would be lost"
    assert hasattr(old, name)


def test_a_patch_through_the_old_path_reaches_the_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    from praisonai.compute.providers import docker as real
    from praisonai.integrations.compute import docker as old

    monkeypatch.setattr(old, "DockerCompute", "patched")
    assert real.DockerCompute == "patched"


def test_flyio_compute_is_praisonai_name_for_fly_compute() -> None:
    from praisonai.compute.providers.flyio import FlyCompute
    from praisonai.integrations.compute import FlyioCompute
    from praisonai.integrations.compute.flyio import FlyioCompute as FromModule

    assert FlyioCompute is FromModule is FlyCompute
    assert FlyioCompute(api_token="t", app="a").provider_name == "flyio"


def test_importing_the_package_loads_no_provider_and_no_sdk() -> None:
    """A fresh interpreter: importing the package imports no provider module and no vendor SDK;
    touching one class imports that provider only."""
    script = textwrap.dedent(
        f"""
        import sys
        import praisonai.integrations.compute as compute
        loaded = lambda: sorted(m for m in sys.modules if m.split(".")[0] in {SDKS!r}
                                or m.startswith("praisonai.compute.providers."))
        print(loaded())
        compute.LocalCompute
        print(loaded())
        """
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    before, after = out.stdout.splitlines()
    assert before == "[]"
    assert "'praisonai.compute.providers.local'" in after
    assert not any(f"'{sdk}" in after for sdk in SDKS), after


@pytest.mark.parametrize("name", sorted(n for n, (_m, _c, sdk, _e) in NAMES.items() if sdk))
def test_a_missing_sdk_is_one_sentence_naming_the_extra(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import praisonai.integrations.compute as compute

    _module, _ours, sdk, extra = NAMES[name]
    monkeypatch.setitem(sys.modules, sdk, None)  # what `import sdk` and find_spec see when it is absent
    with pytest.raises(MissingDependencyError) as caught:
        getattr(compute, name)
    assert str(caught.value) == f"the {extra} provider needs {sdk}: pip install 'praisonai[{extra}]'"
    with pytest.raises(MissingDependencyError):
        exec(f"from praisonai.integrations.compute import {name}", {})


@pytest.mark.parametrize(("old_path", "name", "sdk"), [
    ("praisonai.integrations.compute.e2b", "E2BCompute", "e2b"),
    ("praisonai.integrations.compute.daytona", "DaytonaCompute", "daytona"),
    ("praisonai.integrations.compute.docker", "DockerCompute", "docker"),
])  # fmt: skip
def test_a_provider_built_from_its_module_says_a_missing_sdk_before_making_anything(
    old_path: str, name: str, sdk: str, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``from praisonai.integrations.compute.e2b import E2BCompute; E2BCompute()`` skips the
    registry: its first provision says the missing SDK, as the registry would, and leaves no row."""
    from praisonai import _portal
    from praisonai._ledger import Ledger

    provider = getattr(importlib.import_module(old_path), name)()
    monkeypatch.setitem(sys.modules, sdk, None)
    with pytest.raises(MissingDependencyError) as caught:
        _portal.call(provider.provision)
    assert str(caught.value) == f"the {sdk} provider needs {sdk}: pip install 'praisonai[{sdk}]'"
    assert not list(Ledger.default().entries())


def test_an_unknown_name_is_an_attribute_error() -> None:
    import praisonai.integrations.compute as compute

    with pytest.raises(AttributeError, match="KubeCompute"):
        compute.KubeCompute  # noqa: B018
