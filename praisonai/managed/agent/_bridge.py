"""The managed loop runs on praisonai's portal loop; these carry its events to a caller on a
plain thread (a queue) or on another event loop (a worker thread per item)."""

from __future__ import annotations

import queue
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, TypeVar

import anyio.to_thread

from praisonai import _portal

T = TypeVar("T")
Emit = Callable[[Any], None]
_DONE = object()


def stream(
    run: Callable[[Emit], Awaitable[T]], stop: Callable[[], None], done: Callable[[T], None]
) -> Iterator[Any]:
    """Start ``run(emit)`` on the portal and yield what it emits as it does; ``done`` gets its
    result at the end. Leaving early calls ``stop`` and waits for ``run`` to finish."""
    items: queue.SimpleQueue[object] = queue.SimpleQueue()
    future = _portal.submit(run, items.put)
    future.add_done_callback(lambda _: items.put(_DONE))
    try:
        while (item := items.get()) is not _DONE:
            yield item
        done(future.result())
    finally:
        if not future.done():
            stop()
            future.exception()  # wait: the turn records how it ended


async def astream(items: Iterator[T]) -> AsyncIterator[T]:
    """Iterate a blocking iterator from an event loop, one worker-thread wait per item."""
    try:
        while (
            item := await anyio.to_thread.run_sync(next, items, _DONE, abandon_on_cancel=True)
        ) is not _DONE:
            yield item  # type: ignore[misc]
    finally:
        close = getattr(items, "close", None)
        if close is not None:
            await anyio.to_thread.run_sync(close)


def soon(fn: Callable[[], None]) -> None:
    """Call ``fn`` on the portal loop (at once when already there)."""
    if _portal.on_loop_thread():
        fn()
    else:
        _portal.submit(_call, fn)


async def _call(fn: Callable[[], None]) -> None:
    fn()
