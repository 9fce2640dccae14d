"""Where praisonai keeps its state on this machine."""

from __future__ import annotations

import errno
import os
import sqlite3
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


# sqlite's primary result codes (https://sqlite.org/rescode.html), which typeshed does not list
_SQLITE_IOERR, _SQLITE_FULL = 10, 13


def disk_full(exc: BaseException, where: Path) -> bool:
    """Whether ``exc``, raised writing under ``where``, means the disk there is full: ``ENOSPC`` or
    ``EDQUOT``, sqlite's "database or disk is full", or its bare "disk I/O error" on a file system
    with no space left (what sqlite says when its WAL or shared-memory file cannot grow)."""
    if isinstance(exc, OSError):
        return exc.errno in (errno.ENOSPC, errno.EDQUOT)
    if not isinstance(exc, sqlite3.Error):
        return False
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF  # the primary code of an extended one
    if code == _SQLITE_FULL or "disk is full" in str(exc):
        return True
    return (code == _SQLITE_IOERR or "disk I/O error" in str(exc)) and no_space(where)


def no_space(where: Path) -> bool:
    """Whether the file system holding ``where`` has no block left for this user."""
    try:
        return os.statvfs(where).f_bavail == 0
    except OSError:
        return False


def full_home(home: Path, what: str) -> str:
    """One sentence for a full disk under the home: which, what could not be written, what to do."""
    which = "PRAISONAI_HOME" if os.environ.get("PRAISONAI_HOME") else "the praisonai home"
    return (
        f"the disk holding {which} {home} is full, so {what} could not be written; free some space "
        "on it, or set PRAISONAI_HOME to a directory on another disk"
    )
