"""A Daytona instance's port: Daytona's own signed preview URL (``create_signed_preview_url``),
whose token is in the URL, so a browser or another program opens it without a header. It expires
after :data:`~praisonai._limits.PREVIEW_URL_TTL_S`; a later ``expose`` of the port returns the
same URL while more than half of that is left, else a fresh one."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from praisonai._limits import PREVIEW_URL_TTL_S
from praisonai.compute.abilities import NoForwards
from praisonai.compute.providers.daytona._client import translated


class SignedPreviews(NoForwards):
    """``DaytonaCompute``'s forwarder (``compute.abilities.ports``), built from its ``sandbox``:
    ``sandbox(instance_id, op)`` enters the instance's ``AsyncSandbox`` (unknown ->
    ``InstanceNotFoundError``). Its ``links`` go with the sandbox (``forget``)."""

    def __init__(self, sandbox: Callable[[str, str], AbstractAsyncContextManager[Any]]) -> None:
        self.sandbox = sandbox
        self.links = PreviewLinks()

    async def expose(self, instance_id: str, port: int) -> str:
        found = self.links.fresh(instance_id, port)
        if found is None:
            async with self.sandbox(instance_id, "expose") as sandbox:
                with translated("expose", instance_id=instance_id):
                    found = await signed_url(sandbox, port)
            self.links.keep(instance_id, port, found)
        return found


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
