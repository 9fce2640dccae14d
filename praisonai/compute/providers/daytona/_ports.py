"""A Daytona instance's port: Daytona's own signed preview URL (``create_signed_preview_url``),
whose token is in the URL, so a browser or another program opens it without a header. It expires
after :data:`~praisonai._limits.PREVIEW_URL_TTL_S`; a later ``expose`` of the port returns the
same URL while more than half of that is left, else a fresh one."""

from __future__ import annotations

import threading
import time
from typing import Any

from praisonai._limits import PREVIEW_URL_TTL_S


class PreviewLinks:
    """The signed URLs one provider object got, by instance and port, with when each expires."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._links: dict[tuple[str, int], tuple[str, float]] = {}

    def fresh(self, instance_id: str, port: int) -> str | None:
        with self._lock:
            url, expires_at = self._links.get((instance_id, port), ("", 0.0))
        return url if expires_at - time.monotonic() > PREVIEW_URL_TTL_S / 2 else None

    def keep(self, instance_id: str, port: int, url: str) -> None:
        with self._lock:
            self._links[instance_id, port] = (url, time.monotonic() + PREVIEW_URL_TTL_S)

    def forget(self, instance_id: str) -> None:
        with self._lock:
            for key in [k for k in self._links if k[0] == instance_id]:
                del self._links[key]


async def signed_url(sandbox: Any, port: int) -> str:
    """A new signed preview URL of ``sandbox``'s ``port``, valid for :data:`PREVIEW_URL_TTL_S`."""
    signed = await sandbox.create_signed_preview_url(port, expires_in_seconds=PREVIEW_URL_TTL_S)
    return str(signed.url)
