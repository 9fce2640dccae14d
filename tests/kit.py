"""What several test modules share that is not a fixture: import it as ``from kit import …``
(pytest puts tests/ on the path, as the folder of the root conftest.py; a second conftest.py in a
sub-folder makes ``from conftest import …`` ambiguous, hence this module)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from praisonai import _portal
from praisonai.compute.base import ComputeProvider

Instance = tuple[ComputeProvider, str]


def provisioned(provider: ComputeProvider) -> Iterator[Instance]:
    """Yield ``(provider, instance_id)`` of a new instance, removed afterwards whatever happens."""
    info = _portal.call(provider.provision)
    try:
        yield provider, info.instance_id
    finally:
        _portal.call(provider.shutdown, info.instance_id)


@dataclass
class Member:
    """The attributes SharedCompute reads and swaps on an agent (praisonai.agents.Agent has them)."""

    name: str
    tools: list[Callable[..., Any]] = field(default_factory=list)
    instructions: str = "You are helpful."
    backend: object = None
