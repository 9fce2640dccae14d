"""What the containment tests share: a host directory no instance may reach, holding SECRET, and
an instance of each provider that runs the helper."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kit import SECRET, Instance, provisioned

from praisonai.compute.providers.local import LocalCompute


@pytest.fixture
def host_dir(tmp_path: Path) -> Path:
    """A host directory the instance must never reach: one marker file in it."""
    folder = tmp_path / "host"
    folder.mkdir()
    (folder / "marker").write_bytes(SECRET)
    return folder


@pytest.fixture(scope="module")
def local_channel_instance() -> Iterator[Instance]:
    yield from provisioned(LocalCompute())


@pytest.fixture(params=["docker", "ssh", "local_channel"])
def helped(request: pytest.FixtureRequest) -> Instance:
    """An instance whose exec calls go through the helper (local: its channel, driven directly)."""
    instance: Instance = request.getfixturevalue(f"{request.param}_instance")
    return instance
