"""PraisonAI's compute providers by PraisonAI's names: ``from praisonai.integrations.compute
import E2BCompute`` is our ``praisonai.compute.providers.e2b.E2BCompute``.

``FlyioCompute`` is PraisonAI's name for our ``FlyCompute``. The modules
``praisonai.integrations.compute.{local,docker,e2b,modal_compute,daytona,flyio,tenki}`` *are*
the provider modules (aliased in ``sys.modules``, as PraisonAI's own shims do), so a monkeypatch
through either path patches one object.

Importing this package imports no provider and no vendor SDK: a class is imported when it is
first touched, and a missing SDK is then one ``MissingDependencyError`` naming the pip extra.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from praisonai.compute.sdks import check_installed

# PraisonAI's class name -> (our provider module, our class name)
_EXPORTS = {
    "LocalCompute": ("praisonai.compute.providers.local", "LocalCompute"),
    "DockerCompute": ("praisonai.compute.providers.docker", "DockerCompute"),
    "E2BCompute": ("praisonai.compute.providers.e2b", "E2BCompute"),
    "ModalCompute": ("praisonai.compute.providers.modal", "ModalCompute"),
    "DaytonaCompute": ("praisonai.compute.providers.daytona", "DaytonaCompute"),
    "FlyioCompute": ("praisonai.compute.providers.flyio", "FlyioCompute"),
    "TenkiCompute": ("praisonai.compute.providers.tenki", "TenkiCompute"),
}

__all__ = list(_EXPORTS)

if TYPE_CHECKING:
    from praisonai.compute.providers.daytona import DaytonaCompute as DaytonaCompute
    from praisonai.compute.providers.docker import DockerCompute as DockerCompute
    from praisonai.compute.providers.e2b import E2BCompute as E2BCompute
    from praisonai.compute.providers.flyio import FlyioCompute as FlyioCompute
    from praisonai.compute.providers.local import LocalCompute as LocalCompute
    from praisonai.compute.providers.modal import ModalCompute as ModalCompute
    from praisonai.compute.providers.tenki import TenkiCompute as TenkiCompute


def __getattr__(name: str) -> type:
    """The provider class PraisonAI calls ``name``, once its SDK is checked. Not cached, so an
    SDK removed later (or hidden by a test) is said again rather than masked."""
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attribute = _EXPORTS[name]
    cls: type = getattr(importlib.import_module(module), attribute)
    check_installed(cls)
    return cls


def __dir__() -> list[str]:
    return sorted(__all__)
