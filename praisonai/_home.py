"""Where praisonai keeps its state on this machine."""

from __future__ import annotations

import os
from pathlib import Path

from praisonai._errors import HomeUnusableError


def home_path() -> Path:
    """``$PRAISONAI_HOME``, default ``~/.praisonai``, as it is (not created, not checked)."""
    return Path(os.environ.get("PRAISONAI_HOME") or Path.home() / ".praisonai")


def praisonai_home() -> Path:
    """The home, created on first use, owner-only (0700: it holds the ledger, warm instances'
    handoff keys among it); an existing home keeps the mode its owner gave it.

    Raises:
        HomeUnusableError: it cannot be created, is not a directory, or is not writable; the
            message names the path and what to do.
    """
    home = home_path()
    try:
        home.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise HomeUnusableError(unusable_home(home, exc.strerror or str(exc)), op="home") from exc
    if not os.access(home, os.W_OK | os.X_OK):  # also a read-only mount, which root cannot write either
        raise HomeUnusableError(unusable_home(home, "it is not writable"), op="home")
    return home


def unusable_home(home: Path, why: str) -> str:
    """One sentence: which home, why it cannot be used, and what to do."""
    which = "PRAISONAI_HOME" if os.environ.get("PRAISONAI_HOME") else "the praisonai home"
    why = why[:1].lower() + why[1:]
    return f"{which} {home} cannot be used ({why}); set PRAISONAI_HOME to a writable directory"
