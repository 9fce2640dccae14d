"""The name a write gives its new file until that file is renamed over the target.

It is made beside the target (a rename stays within one file system and replaces in one step),
and never from the target's own name: a name may be NAME_MAX (255) bytes, so anything added to it
would not fit. Its random part makes it unguessable, so a command cannot plant a link or a FIFO
where the next write will open, and unique among writers that share a directory from other
processes, pid namespaces or machines. Every provider's write, and the helper's ``__p_write``
(which is sent the name), uses this one shape.
"""

from __future__ import annotations

import posixpath
import secrets

#: What every partial file's name starts with (a leftover one can be recognised and removed).
PREFIX = ".praisonai-write-"


def partial_name() -> str:
    """A new partial file name: 41 bytes, whatever name it stands for."""
    return PREFIX + secrets.token_hex(12)


def partial_beside(path: str) -> str:
    """A new partial file's path in the directory of ``path`` (a relative path stays relative)."""
    return posixpath.join(posixpath.dirname(path), partial_name())
