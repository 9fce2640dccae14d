"""Where an instance comes from: the provider contract, its config, and the registry."""

from praisonai._types import Capability, ExecRequest, ExecResult, InstanceInfo, InstanceStatus
from praisonai.compute.base import ComputeProvider
from praisonai.compute.config import ComputeConfig
from praisonai.compute.registry import available_providers, default_compute, resolve_compute
from praisonai.compute.snapshots import SnapshotInfo, list_snapshots, prune_snapshots, remove_snapshot

__all__ = [
    "Capability",
    "ComputeConfig",
    "ComputeProvider",
    "ExecRequest",
    "ExecResult",
    "InstanceInfo",
    "InstanceStatus",
    "SnapshotInfo",
    "available_providers",
    "default_compute",
    "list_snapshots",
    "prune_snapshots",
    "remove_snapshot",
    "resolve_compute",
]
