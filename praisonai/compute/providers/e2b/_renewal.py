"""E2B's deadline moved like an idle timer: renewed (``set_timeout``) on activity.

E2B's sandbox ``timeout`` is an absolute deadline. Every renewal sets it to the idle limit from
now, clamped to the ttl deadline kept in metadata (``_meta.renewal_s``), at most once per quarter
of the idle limit, so a renewal is due long before the deadline. Activity is:

- a provider call (``renew``, from the event loop), and a native exec while it runs
  (``keep_alive``);
- channel traffic (``soon``, from any thread: a request sent to the helper or input typed into a
  session) and a terminal's input and output, renewed in a thread of its own so a request never
  waits for the control plane;
- a session command that runs quietly: the keeper thread of an instance with a channel renews
  while ``praisonai.compute._activity`` says the instance is busy.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

import anyio

from praisonai._errors import PraisonAIError
from praisonai.compute import _activity
from praisonai.compute.providers.e2b._errors import translated
from praisonai.compute.providers.e2b._meta import MAX_TIMEOUT_S, idle_timeout_s_of, renewal_s


class Renewals:
    """The renewals of one provider's sandboxes. ``sandboxes`` and ``metadata`` are the
    provider's own maps (instance id -> connected ``AsyncSandbox`` / its metadata)."""

    def __init__(
        self,
        sandboxes: dict[str, Any],
        metadata: dict[str, dict[str, str]],
        params: Callable[[], dict[str, Any]],
    ) -> None:
        self.renewed: dict[str, float] = {}  # instance id -> monotonic time of the last renewal
        self._sandboxes, self._metadata, self._params = sandboxes, metadata, params
        self._lock = threading.Lock()
        self._keepers: dict[str, threading.Event] = {}

    def _claim(self, instance_id: str, *, force: bool = False) -> bool:
        """Whether a renewal is due now; a due one is claimed (no other caller makes it too)."""
        metadata = self._metadata.get(instance_id)
        if metadata is None:
            return False
        with self._lock:
            now = time.monotonic()
            if (
                not force
                and now - self.renewed.get(instance_id, 0.0)
                < (idle_timeout_s_of(metadata) or MAX_TIMEOUT_S) / 4
            ):
                return False
            self.renewed[instance_id] = now
            return True

    async def renew(self, instance_id: str, sandbox: Any, *, force: bool = False) -> None:
        """Renew now if due (``force``: regardless), from the event loop."""
        if self._claim(instance_id, force=force):
            with translated("renew", instance_id):
                await sandbox.set_timeout(renewal_s(self._metadata[instance_id]))

    async def keep_alive(self, instance_id: str, sandbox: Any) -> None:
        """Renew every half idle limit while a native exec runs (cancel it when the exec ends)."""
        while True:
            await anyio.sleep((idle_timeout_s_of(self._metadata[instance_id]) or MAX_TIMEOUT_S) / 2)
            try:
                await self.renew(instance_id, sandbox, force=True)
            except PraisonAIError:  # the command's own call reports a sandbox that is gone
                return

    def soon(self, instance_id: str) -> None:
        """Channel traffic (any thread): renew if due, in a thread of its own."""
        if self._claim(instance_id):
            threading.Thread(target=self._renew_sync, args=(instance_id,), daemon=True).start()

    def _renew_sync(self, instance_id: str) -> None:
        from e2b import Sandbox

        sandbox, metadata = self._sandboxes.get(instance_id), self._metadata.get(instance_id)
        if sandbox is None or metadata is None:
            return
        # A sandbox that is gone is reported by the next call that needs it, not from this thread.
        with contextlib.suppress(PraisonAIError), translated("renew", instance_id):
            Sandbox.set_timeout(sandbox.sandbox_id, renewal_s(metadata), **self._params())

    def soon_for(self, instance_id: str) -> Callable[[], None]:
        """:meth:`soon` for ``instance_id``, for traffic that reports itself (a terminal's)."""
        return lambda: self.soon(instance_id)

    def keep(self, instance_id: str) -> None:
        """Start the instance's keeper thread, once: it renews while a session command runs."""
        with self._lock:
            if instance_id in self._keepers:
                return
            stop = self._keepers[instance_id] = threading.Event()
        threading.Thread(
            target=self._keeper, args=(instance_id, stop), name="praisonai-e2b-keeper", daemon=True
        ).start()

    def _keeper(self, instance_id: str, stop: threading.Event) -> None:
        metadata = self._metadata.get(instance_id, {})
        while not stop.wait((idle_timeout_s_of(metadata) or MAX_TIMEOUT_S) / 4):
            if instance_id not in self._metadata:
                return  # shut down
            if _busy(instance_id) and self._claim(instance_id):
                self._renew_sync(instance_id)

    def forget(self, instance_id: str) -> None:
        """The instance was shut down: stop its keeper."""
        with self._lock:
            self.renewed.pop(instance_id, None)
            stop = self._keepers.pop(instance_id, None)
        if stop is not None:
            stop.set()


def _busy(instance_id: str) -> bool:
    entry = next((tracked for name, tracked in _activity.tracked() if name == instance_id), None)
    return entry is not None and entry.busy()
