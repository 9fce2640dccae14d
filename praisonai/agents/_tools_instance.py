"""``Agent(tools_run_on=...)``: one agent's shell and file tools on an instance of its own.

The agent's :class:`~praisonai.managed.SharedCompute` is attached on its first turn and its
instance made on the first tool call (so an agent that never calls a tool costs nothing). Files
persist across turns. ``close()`` removes the instance and gives the agent its own tools back; a
later turn makes a new one. An agent still open at interpreter exit is closed then; one that is
garbage-collected first releases its instance from a thread of its own.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from typing import Any

from praisonai import _portal
from praisonai.managed import SharedCompute
from praisonai.managed.shared import check_place


class ToolsInstance:
    """The place an agent named for its tools, and the SharedCompute attached to it, if any."""

    def __init__(self, place: object) -> None:
        check_place(place)
        self.place = place
        self.shared: SharedCompute | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None
        # Held while attaching and while closing, so a turn starting during close() never
        # attaches to an instance that is being removed, and concurrent first turns attach once.
        self._lock = threading.Lock()

    @property
    def attached(self) -> bool:
        return self.shared is not None

    def attach(self, agent: Any) -> None:
        """Attach a new SharedCompute to ``agent`` unless one is attached (blocking, briefly)."""
        with self._lock:
            if self.shared is not None:
                return
            shared = SharedCompute(self.place)
            shared.attach([agent], override_declared=True, loop_tools=True)
            finalizer = weakref.finalize(agent, _release, shared)
            finalizer.atexit = False  # at exit close_at_exit closes the agent, on the portal loop
            self.shared, self._finalizer = shared, finalizer
            _portal.close_at_exit(agent)

    def close(self) -> None:
        """Remove the instance and restore the agent's tools (blocking). Idempotent."""
        with self._lock:
            shared, self.shared = self.shared, None
            if self._finalizer is not None:
                self._finalizer.detach()
                self._finalizer = None
            if shared is not None:
                shared.shutdown()


def _release(shared: SharedCompute) -> None:
    """The agent was collected: remove its instance. This runs in whatever thread the collector
    ran in, the portal's own included, where waiting for the portal would deadlock; so a thread
    of its own does the (blocking) shutdown."""
    if shared.instance_id is not None:
        name = "praisonai-release"
        threading.Thread(target=_shutdown_quietly, args=(shared,), name=name, daemon=True).start()


def _shutdown_quietly(shared: SharedCompute) -> None:
    with contextlib.suppress(Exception):  # nobody to tell; the instance's idle policy stops it then
        shared.shutdown()
