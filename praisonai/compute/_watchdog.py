"""The dead-man's switch of a docker instance: its main process (``channel/watchdog.sh``).

The container runs the watchdog instead of ``sleep infinity``; the watchdog exits once nothing
was active for ``idle_timeout_s`` (with ``auto_shutdown``) or the instance is ``ttl_s`` old, and
the container, created with ``auto_remove``, is then removed by the engine. So no instance
outlives its purpose even when its client was SIGKILLed and nothing else ever reaps it.
"""

from __future__ import annotations

from importlib import resources

from praisonai.compute.config import ComputeConfig

WATCHDOG = resources.files("praisonai.channel").joinpath("watchdog.sh").read_text()


def watchdog_command(cfg: ComputeConfig, spool: str) -> list[str]:
    """The container command that stops the instance by itself under ``cfg``'s policy (0: never).
    ``spool`` is where the exec helper leaves its activity markers."""
    idle = cfg.idle_timeout_s if cfg.auto_shutdown else 0
    ttl = cfg.ttl_s or 0
    return ["sh", "-c", WATCHDOG, "praisonai-watchdog", str(idle), str(ttl), spool]
