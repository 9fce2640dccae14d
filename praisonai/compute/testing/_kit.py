"""What a conformance check works with: the :class:`Context` it gets, and the :class:`Suite` a
module of checks builds (each check with the capabilities it needs)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from collections.abc import Awaitable, Callable

import anyio

from praisonai._types import Capability, ExecResult
from praisonai.compute.base import ComputeProvider


@dataclasses.dataclass(frozen=True)
class Context:
    """What a check works with. ``provider_expr`` rebuilds the provider in a child process."""

    provider: ComputeProvider
    instance_id: str
    provider_expr: str = ""

    async def sh(self, command: str, **kwargs: object) -> ExecResult:
        return await self.provider.execute(self.instance_id, command, **kwargs)  # type: ignore[arg-type]

    async def in_child(self, body: str) -> str:
        """Run ``body`` in a new Python process where ``p`` is the provider rebuilt from
        ``provider_expr``; return what it printed (a non-zero exit fails the check)."""
        expr = self.provider_expr or f"resolve_compute({self.provider.name!r})"
        script = (
            "import anyio\n"
            "from praisonai.compute.registry import resolve_compute\n"
            "from praisonai.compute.providers.local import LocalCompute\n"
            "from praisonai.compute.providers.ssh import SSHCompute\n"
            "from praisonai.compute.testing.fake import FakeProvider\n"
            f"p = {expr}\n{body}"
        )
        argv = [sys.executable, "-c", script]
        child = await anyio.to_thread.run_sync(
            lambda: subprocess.run(argv, capture_output=True, text=True, timeout=120)
        )
        assert child.returncode == 0, child.stderr
        return child.stdout


Check = Callable[[Context], Awaitable[None]]


@dataclasses.dataclass(frozen=True)
class Suite:
    """The checks of one module, by name, and what each needs of a provider: capabilities it
    must declare, and whether it drives the instance's helper channel itself."""

    checks: dict[str, Check] = dataclasses.field(default_factory=dict)
    needs: dict[str, frozenset[Capability]] = dataclasses.field(default_factory=dict)
    channel: set[str] = dataclasses.field(default_factory=set)

    def check(self, *needs: Capability, channel: bool = False) -> Callable[[Check], Check]:
        """Decorator: add the check to this suite (``channel``: it kills or opens helpers)."""

        def add(fn: Check) -> Check:
            self.checks[fn.__name__] = fn
            self.needs[fn.__name__] = frozenset(needs)
            if channel:
                self.channel.add(fn.__name__)
            return fn

        return add
