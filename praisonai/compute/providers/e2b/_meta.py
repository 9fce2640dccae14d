"""What an E2B sandbox's metadata says: its identity, working dir, idle limit and ttl deadline."""

from __future__ import annotations

import time
from typing import Any

from praisonai._lifetime import whole_units
from praisonai._types import InstanceInfo, InstanceStatus
from praisonai.compute.config import ComputeConfig, NetworkAllow
from praisonai.compute.lifecycle import LABEL_CREATED

WORKDIR = "praisonai.workdir"
TTL_DEADLINE = "praisonai.ttl_deadline"  # epoch seconds: no renewal goes past it
#: The renewal length, the instance's idle_timeout_s ("" when idleness never stops the instance).
IDLE_TIMEOUT_S = "praisonai.idle_timeout_s"
#: The same, as sandboxes made before the setting had one name everywhere spell it.
_IDLE_BEFORE = "praisonai.idle_s"
#: E2B's longest sandbox timeout (Pro); the server silently caps a longer one to the plan's.
MAX_TIMEOUT_S = 24 * 3600


def create_options(cfg: ComputeConfig) -> dict[str, Any]:
    """``AsyncSandbox.create``'s network and lifecycle arguments for ``cfg``: an instance that
    idleness pauses is paused by E2B itself past its timeout (idle, or its owner gone), never
    killed with its files."""
    from e2b import ALL_TRAFFIC

    options: dict[str, Any] = {}
    if cfg.network == "none":
        options["allow_internet_access"] = False
    elif isinstance(cfg.network, NetworkAllow):
        options["network"] = {"allow_out": list(cfg.network.allow), "deny_out": [ALL_TRAFFIC]}
    if cfg.lifetime.pauses:
        options["lifecycle"] = {"on_timeout": "pause"}
    return options


def capture_name(tag: str) -> str:
    """The E2B snapshot name of capture ``tag`` (a hex digest: a valid template name)."""
    return f"praisonai-capture-{tag}".lower()


def idle_timeout_text(idle_limit_s: float | None) -> str:
    """The ``IDLE_TIMEOUT_S`` entry for an instance of this idle limit (whole seconds, up)."""
    return "" if idle_limit_s is None else str(whole_units(idle_limit_s))


def idle_timeout_s_of(metadata: dict[str, str]) -> float | None:
    text = metadata.get(IDLE_TIMEOUT_S, metadata.get(_IDLE_BEFORE, ""))
    return float(text) if text else None


def timeout_for(idle: float | None, deadline: str) -> int:
    """Seconds until the sandbox may stop: the idle limit, never past the ttl deadline."""
    wanted = float(idle) if idle is not None else float(MAX_TIMEOUT_S)
    if deadline:
        wanted = min(wanted, float(deadline) - time.time())
    return max(1, min(int(wanted), MAX_TIMEOUT_S))


def status_of(state: Any) -> InstanceStatus:
    value = getattr(state, "value", state)
    if value == "paused":
        return InstanceStatus.PAUSED
    return InstanceStatus.RUNNING if value == "running" else InstanceStatus.STOPPED


def info_of(
    instance_id: str, sandbox_id: str, metadata: dict[str, str], status: InstanceStatus
) -> InstanceInfo:
    return InstanceInfo(
        instance_id=instance_id,
        provider="e2b",
        status=status,
        endpoint=f"e2b://{sandbox_id}",
        created_at=float(metadata.get(LABEL_CREATED, 0) or 0),
        labels=dict(metadata),
        metadata={"sandbox_id": sandbox_id, WORKDIR: metadata.get(WORKDIR, "/workspace")},
    )


def renewal_s(metadata: dict[str, str]) -> int:
    """The timeout a renewal sets: the idle limit from now, clamped to the ttl deadline."""
    return timeout_for(idle_timeout_s_of(metadata), metadata.get(TTL_DEADLINE, ""))
