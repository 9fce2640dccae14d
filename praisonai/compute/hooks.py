"""What a provider MUST write: nine primitives, each one vendor call or a few.

``ComputeProvider`` (``praisonai.compute.base``) does the cross-cutting work around them (id and
path checks, config validation, activity, the ledger, clean-up on failure) and calls them with
checked arguments. The optional hooks live with their ability in ``praisonai.compute.abilities``;
a provider with only a byte stream gets ``_exec``, ``_read`` and ``_write`` from
``praisonai.compute.channel.ChannelMixin``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path

from praisonai._types import ExecRequest, ExecResult, InstanceInfo
from praisonai.compute.config import ComputeConfig

__all__ = ["ProviderHooks"]


class ProviderHooks(ABC):
    """The abstract primitives of the provider contract."""

    @abstractmethod
    async def _create(self, instance_id: str, cfg: ComputeConfig, labels: dict[str, str]) -> InstanceInfo:
        """Create and start the instance. May leave partial state: ``_destroy`` follows on error."""

    @abstractmethod
    async def _destroy(self, instance_id: str) -> bool:
        """Remove the instance now, killing what runs in it; ``False`` if it did not exist."""

    @abstractmethod
    async def _status(self, instance_id: str) -> InstanceInfo:
        """Current state; raises ``InstanceNotFoundError`` for an unknown id."""

    @abstractmethod
    async def _list(self) -> list[InstanceInfo]:
        """Every instance of this provider, found from provider-side state (not process memory)."""

    @abstractmethod
    async def _exec(self, instance_id: str, request: ExecRequest) -> ExecResult:
        """Run ``request`` honouring its cwd, env, stdin, timeout (kill the tree, keep partial
        output) and output cap."""

    async def _before_exec(self, instance_id: str) -> None:
        """Make ready what must be before a command's timeout starts to run (ssh: the helper,
        whose login shell may be slow to start and has a deadline of its own); by default nothing."""
        return None

    @abstractmethod
    async def _read(self, instance_id: str, path: str) -> bytes:
        """Read a whole file."""

    @abstractmethod
    async def _write(self, instance_id: str, path: str, data: bytes) -> None:
        """Write a whole file, creating parent directories."""

    @abstractmethod
    async def _upload(self, instance_id: str, local: Path, remote: str) -> None:
        """Copy a local file or directory into the instance."""

    @abstractmethod
    async def _download(self, instance_id: str, remote: str, local: Path) -> None:
        """Copy a file or directory out of the instance."""
