"""Fixtures of the hosted backend's tests: the Managed Agents wire fake."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from fakes.managed_agents import ManagedAgentsFake


@pytest.fixture
def fake() -> Iterator[ManagedAgentsFake]:
    """A Managed Agents fake with no script (a module may override it); it must stop every thread
    it started."""
    with ManagedAgentsFake() as server:
        yield server
    left = [t.name for t in threading.enumerate() if t.name.startswith("managed-")]
    assert not left, f"the fake left threads running: {left}"
