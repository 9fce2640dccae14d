"""One-shot runs: a fresh instance that lives as long as its command (``docker run --rm``).
Brought by the provider's *one-shot* part, a :class:`Launcher`.

No capability says it: a provider that holds a launcher has the one-shot path, and
``ComputeProvider.runs_once`` asks whether it holds one (and whether the config needs steps
first); ``run_once`` refuses otherwise, and callers provision, execute and shut down instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from praisonai._types import ExecRequest, ExecResult
from praisonai.compute.config import ComputeConfig


class Launcher(Protocol):
    """A provider's part that runs one command in an instance of its own."""

    def serves(self, cfg: ComputeConfig) -> bool:
        """Whether this provider can start an instance of ``cfg`` with its command (docker: not
        under gVisor nor behind an allowlist); the generic conditions are the caller's."""
        ...

    async def launch(
        self,
        instance_id: str,
        cfg: ComputeConfig,
        labels: dict[str, str],
        request: ExecRequest,
        on_start: Callable[[], None] | None,
    ) -> ExecResult:
        """Create instance ``instance_id`` running ``request.command`` as its own work, stream its
        output to ``request.on_output``, kill it at ``request.timeout``, and return only once it is
        gone; when it raises, the provider's ``_destroy`` follows."""
        ...
