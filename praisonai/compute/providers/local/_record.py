"""A local instance's record: what ``instance.json`` holds, plus where the instance lives."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from praisonai._types import InstanceInfo, InstanceStatus


@dataclass(frozen=True, slots=True)
class Instance:
    """What ``instance.json`` holds, plus where the instance lives."""

    instance_id: str
    root: Path
    working_dir: str  # the path commands and files see (the workspace under isolation)
    env: dict[str, str]
    isolate: bool
    network: str
    created_at: float
    labels: dict[str, str]

    @property
    def workspace(self) -> Path:
        return self.root / "workspace"

    def info(self, *, paused: bool = False) -> InstanceInfo:
        return InstanceInfo(
            instance_id=self.instance_id,
            provider="local",
            status=InstanceStatus.PAUSED if paused else InstanceStatus.RUNNING,
            endpoint=f"local://{self.workspace}",
            created_at=self.created_at,
            labels=self.labels,
            metadata={"workspace": str(self.workspace), "isolated": self.isolate},
        )


def save(inst: Instance) -> None:
    """Write instance.json (mode 0600: it holds env values) atomically."""
    partial = inst.root / "instance.json.tmp"
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(_to_json(inst), f)
    os.replace(partial, inst.root / "instance.json")


def _to_json(inst: Instance) -> dict[str, Any]:
    return {
        "instance_id": inst.instance_id,
        "working_dir": inst.working_dir,
        "env": inst.env,
        "isolate": inst.isolate,
        "network": inst.network,
        "created_at": inst.created_at,
        "labels": inst.labels,
    }


__all__ = ["Instance", "save"]
