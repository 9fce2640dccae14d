"""Where praisonai keeps its state on this machine."""

from __future__ import annotations

import os
from pathlib import Path


def praisonai_home() -> Path:
    """``$PRAISONAI_HOME``, default ``~/.praisonai``; created on first use."""
    home = Path(os.environ.get("PRAISONAI_HOME") or Path.home() / ".praisonai")
    home.mkdir(parents=True, exist_ok=True)
    return home
