"""The one sync→async bridge: a single long-lived event-loop thread serves every sync face.

Objects bound to an event loop (connections, vendor async clients) live on this one loop for the
life of the process, so they survive between calls — unlike a new loop per call. The thread is a
daemon; at interpreter exit the handles registered with :func:`close_at_exit` are closed first,
then the loop stops.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

# anyio (and asyncio under it) loads with the first call, not with ``from praisonai import Sandbox``.
if TYPE_CHECKING:
    from anyio.from_thread import BlockingPortal

T = TypeVar("T")

_lock = threading.Lock()
_portal: BlockingPortal | None = None
_thread: threading.Thread | None = None


class _Closable(Protocol):
    async def aclose(self) -> None: ...


_open_at_exit: weakref.WeakSet[Any] = weakref.WeakSet()


def on_loop_thread() -> bool:
    """Whether the caller runs on the portal loop's own thread (where blocking on it would deadlock)."""
    return threading.current_thread() is _thread


def call(fn: Callable[..., Awaitable[T]], *args: Any) -> T:
    """Run ``await fn(*args)`` on the portal loop and return its result (blocking this thread).

    Works from plain threads and from inside another thread's running event loop (that loop is
    blocked meanwhile). Raises ``RuntimeError`` on the portal's own thread, where waiting would
    deadlock.
    """
    portal = _get()
    if on_loop_thread():
        raise RuntimeError(
            "the sync Sandbox API was called from praisonai's own event loop; use AsyncSandbox there"
        )
    return portal.call(fn, *args)


async def on_portal(fn: Callable[..., Awaitable[T]], *args: Any) -> T:
    """``await fn(*args)`` on the portal loop, from any event loop (on it: directly), so that what
    it makes (sandboxes, their channels) lives on the loop every later call reaches it on.

    From another loop the wait happens in a worker thread; if the caller is cancelled meanwhile,
    it stops waiting at once and the call finishes (unobserved) on the portal loop.
    """
    if on_loop_thread():
        return await fn(*args)
    import anyio.to_thread

    return await anyio.to_thread.run_sync(call, fn, *args, abandon_on_cancel=True)


def submit(fn: Callable[..., Awaitable[T]], *args: Any) -> Future[T]:
    """Start ``await fn(*args)`` on the portal loop and return its future at once. Cancelling
    the future cancels the task (its ``finally`` blocks still run on the loop, after the future
    already reads as cancelled)."""
    return _get().start_task_soon(fn, *args)


def iterate(items: AsyncIterator[T]) -> Iterator[T]:
    """Iterate, from a plain thread, an async iterator that lives on the portal loop: one portal
    call per item, no thread of its own. Closing the generator (``close()``, dropping it after a
    ``break``, garbage collection) awaits the iterator's ``aclose()`` if it has one."""
    try:
        while True:
            batch = call(_next, items)
            if not batch:
                return
            yield batch[0]
    finally:
        aclose = getattr(items, "aclose", None)
        if aclose is not None:
            if on_loop_thread():  # dropped on the loop itself: cannot wait
                submit(aclose)
            else:
                call(aclose)


async def _next(items: AsyncIterator[T]) -> list[T]:
    """The next item as a one-item list, or ``[]`` at the end: StopAsyncIteration must not cross
    the portal as an exception (a future cannot carry it cleanly)."""
    try:
        return [await items.__anext__()]
    except StopAsyncIteration:
        return []


def close_at_exit(handle: _Closable) -> None:
    """Close ``handle`` at interpreter exit if it is still open then (held weakly)."""
    _open_at_exit.add(handle)


def forget_at_exit(handle: _Closable) -> None:
    _open_at_exit.discard(handle)


def _get() -> BlockingPortal:
    global _portal, _thread
    with _lock:
        if _portal is None:
            import anyio
            from anyio.from_thread import BlockingPortal

            ready = threading.Event()
            holder: list[BlockingPortal] = []

            async def serve() -> None:
                async with BlockingPortal() as portal:
                    holder.append(portal)
                    ready.set()
                    await portal.sleep_until_stopped()

            _thread = threading.Thread(target=anyio.run, args=(serve,), name="praisonai-portal", daemon=True)
            _thread.start()
            ready.wait()
            _portal = holder[0]
            atexit.register(_shutdown)
        return _portal


def _shutdown() -> None:
    portal = _portal
    if portal is None:
        return
    for handle in list(_open_at_exit):
        with contextlib.suppress(Exception):  # exit must go on; the reaper and gc catch what this misses
            portal.call(handle.aclose)
    with contextlib.suppress(Exception):
        portal.call(portal.stop)
