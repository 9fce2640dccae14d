"""What a PraisonAI config object really sets: the fields of a dataclass instance that differ
from their declared defaults (its ``ComputeConfig``, ``NetworkingConfig``, managed configs)."""

from __future__ import annotations

import dataclasses
from typing import Any


def changed_fields(obj: Any) -> dict[str, Any]:
    """The fields of dataclass instance ``obj`` whose value differs from their declared default
    (what a PraisonAI config object really sets)."""
    return {
        f.name: getattr(obj, f.name)
        for f in dataclasses.fields(obj)
        if getattr(obj, f.name) != _dataclass_default(f)
    }


def _dataclass_default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING
