"""Who a docker instance's commands run as (``compute.separation``): the container's label, read
back by any process that opens a channel to it, so a channel never starts without it: it fails
closed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from praisonai.compute import separation


def user_of(inspected: Mapping[str, Any]) -> str | None:
    """The command user an inspected container was made with (its label)."""
    return separation.user_of((inspected.get("Config") or {}).get("Labels") or {})
