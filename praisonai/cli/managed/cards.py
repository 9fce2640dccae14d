"""The pieces every ``praisonai managed`` view of a record shares: times (stored ones in seconds,
the API's in ISO 8601) in local time, and the ``field  value`` card of a hosted resource."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from praisonai._times import when
from praisonai.cli.managed.describe import clean


def api_time(stamp: str | None, *, short: bool = False) -> str:
    """An API timestamp in local time, as the stored records show theirs."""
    at = epoch(stamp)
    return when(at, short=short) if at is not None else stamp or ""


def epoch(stamp: str | None) -> float | None:
    """An API timestamp (ISO 8601, ``Z`` for UTC) in seconds since the epoch, as the store keeps
    its own (``None`` when there is none, or it does not parse)."""
    try:
        return datetime.fromisoformat((stamp or "").replace("Z", "+00:00")).timestamp()  # 3.10 reads no Z
    except ValueError:
        return None


def model_of(resource: Mapping[str, Any]) -> str:
    """A hosted agent's model id (the API gives a mapping or a plain name)."""
    model = resource.get("model")
    return str(model.get("id") if isinstance(model, Mapping) else model or "")


def times(resource: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The card lines of a hosted resource's created, updated and archived times."""
    return [(name, api_time(resource.get(f"{name}_at"))) for name in ("created", "updated", "archived")]


def first_line(text: str) -> str:
    """The first line of ``text``, cleaned, and how many more there are."""
    lines = clean(text).strip().splitlines()
    return lines[0] + (f"  (+{len(lines) - 1} more lines)" if len(lines) > 1 else "") if lines else ""


def card(lines: Sequence[tuple[str, Any]]) -> None:
    """``field  value`` lines on stdout, the empty values left out."""
    for field, value in lines:
        if value:
            sys.stdout.write(f"{field:<8} {clean(str(value))}\n")  # a hosted API's fields
    sys.stdout.flush()
