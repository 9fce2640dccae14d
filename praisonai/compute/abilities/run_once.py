"""One-shot runs: the ``_run_once`` hook, a fresh instance that lives as long as its command.

Optional and switched on by implementing the hook, not by a capability: ``ComputeProvider.runs_once``
sees whether a provider overrides it, and ``run_once`` falls back to refusing otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from praisonai._errors import UnsupportedFeatureError
from praisonai._types import ExecRequest, ExecResult
from praisonai.compute.config import ComputeConfig


class RunOnce:
    """The one-shot hook of the provider contract."""

    name: ClassVar[str]

    async def _run_once(
        self,
        instance_id: str,
        cfg: ComputeConfig,
        labels: dict[str, str],
        request: ExecRequest,
        on_start: Callable[[], None] | None,
    ) -> ExecResult:
        """Create instance ``instance_id`` running ``request.command`` as its own work, stream its
        output to ``request.on_output``, kill it at ``request.timeout``, and return only once it is
        gone; when it raises, ``_destroy`` follows. Optional: a provider without it is served by
        provision, execute and shutdown."""
        raise UnsupportedFeatureError(f"the {self.name} provider has no one-shot path", op="provision")
