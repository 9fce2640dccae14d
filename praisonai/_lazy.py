"""Names a package exports without importing them until first use (``import praisonai`` stays
fast, and no vendor SDK or heavy layer loads before a name from it is touched)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package`` for ``exports`` (name -> the module defining it):
    the first lookup of a name imports its module and stores the value in the package, so later
    lookups never reach this function. Any other name is an ``AttributeError``."""
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = namespace[name] = getattr(importlib.import_module(module), name)
        return value

    return __getattr__
