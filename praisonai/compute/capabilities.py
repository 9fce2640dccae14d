"""Which ``ComputeConfig`` field needs which :class:`Capability`: the one table that provisioning's
refusal (``ComputeProvider.check_supported``) and ``praisonai env plan`` both read.

A field listed here is honoured only by a provider that declares the capability; asking for it
elsewhere is refused at provisioning, never ignored. Fields not listed (``env``, ``setup``,
``working_dir``…) every provider honours the same way, inside the instance.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

from praisonai._types import Capability
from praisonai.compute.config import ComputeConfig, NetworkAllow


@dataclass(frozen=True, slots=True)
class Need:
    """One capability a config can ask for.

    ``field``: the ``ComputeConfig`` attribute; ``shown``: how a refusal names it;
    ``purpose``: what honouring it means, as ``env plan`` says it; ``asks``: whether a config asks
    for the capability (two capabilities may share a field, told apart by its value: ``network``).
    """

    capability: Capability
    field: str
    shown: str
    purpose: str
    asks: Callable[[ComputeConfig], bool]


#: In the order a refusal lists them.
NEEDS: tuple[Need, ...] = (
    Need(Capability.IMAGE, "image", "image", "starts from this image", lambda c: c.image is not None),
    Need(Capability.CPU_LIMIT, "cpu", "cpu", "a CPU limit on the instance", lambda c: c.cpu is not None),
    Need(Capability.MEMORY_LIMIT, "memory_mb", "memory_mb", "a memory ceiling on the instance",
         lambda c: c.memory_mb is not None),
    Need(Capability.GPU, "gpu", "gpu", "GPUs attached to the instance", lambda c: c.gpu is not None),
    Need(Capability.NETWORK_NONE, "network", "network='none'", "enforced on the instance",
         lambda c: c.network == "none"),
    Need(Capability.NETWORK_ALLOWLIST, "network", "network={'allow': [...]}", "enforced on the instance",
         lambda c: isinstance(c.network, NetworkAllow)),
    Need(Capability.DISK_LIMIT, "disk_mb", "disk_mb", "a disk ceiling on the instance",
         lambda c: c.disk_mb is not None),
    Need(Capability.MOUNTS, "mount_paths", "mount_paths", "host paths bound into the instance",
         lambda c: bool(c.mount_paths)),
    Need(Capability.PACKAGES, "packages", "packages",
         "installed inside the instance at start, each name quoted", lambda c: bool(c.packages)),
    Need(Capability.GVISOR, "runtime", "runtime='runsc'",
         "gVisor's user-space kernel between the instance and the host, checked at start",
         lambda c: c.runtime == "runsc"),
    Need(Capability.RUNC, "runtime", "runtime='runc'", "a plain container on the host's kernel",
         lambda c: c.runtime == "runc"),
    Need(Capability.PAUSE, "idle_action", "idle_action='pause'", "the instance paused when idle, files kept",
         lambda c: c.idle_action == "pause"),
    Need(Capability.PORTS, "ports", "ports", "opened at creation for expose where the vendor needs it",
         lambda c: bool(c.ports)),
)  # fmt: skip

#: Every config field some capability governs.
GOVERNED_FIELDS = frozenset(n.field for n in NEEDS)


def needs_of(config: ComputeConfig) -> list[Need]:
    """The capabilities ``config`` asks for, in table order."""
    return [n for n in NEEDS if n.asks(config)]


def unmet(config: ComputeConfig, capabilities: Collection[Capability]) -> list[Need]:
    """What ``config`` asks for that a provider declaring ``capabilities`` cannot honour."""
    return [n for n in needs_of(config) if n.capability not in capabilities]
