"""One file from an SFTP server, as ``SFTPClient.get`` copies it, minus the stray traceback.

paramiko's ``get`` prefetches from a thread of its own. When the connection is cut while that
thread still sends read requests, the thread dies with ``EOFError`` and Python prints its
traceback to stderr (paramiko/paramiko#2379, open), though the read in the caller's thread
already reports the cut. Here the thread is kept quiet on a cut; the read says it, once.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, BinaryIO

if TYPE_CHECKING:
    import paramiko

_LOG = logging.getLogger(__name__)
#: paramiko's own read size for ``get``: the largest SFTP read request most servers answer whole.
_CHUNK = 32768


def fetch(
    sftp: paramiko.SFTPClient, remote: str, sink: BinaryIO, callback: Callable[[int, int], None]
) -> None:
    """Copy the SFTP file ``remote`` into ``sink``, calling ``callback(bytes so far, size)``.
    Raises what the read raises when the connection is cut (``EOFError``, ``SSHException``,
    ``OSError``) and ``OSError`` when fewer bytes arrive than the file held when opened."""
    with sftp.open(remote, "rb") as source:
        size = source.stat().st_size or 0
        # an instance attribute shadows the method: paramiko starts the thread with self._prefetch_thread
        source._prefetch_thread = _quiet_on_cut(source._prefetch_thread)
        source.prefetch(size)
        done = 0
        while chunk := source.read(_CHUNK):
            sink.write(chunk)
            done += len(chunk)
            callback(done, size)
    if done != size:
        raise OSError(f"{remote}: {size} bytes expected, {done} arrived")


def _quiet_on_cut(run: Callable[..., None]) -> Callable[..., None]:
    import paramiko

    @functools.wraps(run)
    def quiet(*args: Any) -> None:
        try:
            run(*args)
        except (EOFError, OSError, paramiko.SSHException) as exc:
            _LOG.debug("SFTP prefetch stopped by a cut connection: %r", exc)

    return quiet
