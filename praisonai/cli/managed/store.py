"""The session store the ``praisonai managed`` commands read and write: built here only."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from praisonai.managed.store import SqliteSessionStore


def open_store() -> SqliteSessionStore:
    """The store under ``PRAISONAI_HOME`` (a context manager: close it after use)."""
    from praisonai.managed.store import SqliteSessionStore  # not at import: the CLI starts without it

    return SqliteSessionStore()
