"""What the containment tests share: a host directory no instance may reach, holding SECRET."""

from __future__ import annotations

from pathlib import Path

import pytest
from kit import SECRET


@pytest.fixture
def host_dir(tmp_path: Path) -> Path:
    """A host directory the instance must never reach: one marker file in it."""
    folder = tmp_path / "host"
    folder.mkdir()
    (folder / "marker").write_bytes(SECRET)
    return folder
