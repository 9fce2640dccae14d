"""ExecStream: a command's output as it comes, then its result — the one stream implementation.

The command runs as its own task on the event loop the stream was first iterated on, never inside
the consumer's ``async for`` (an async generator that yields from inside a task group breaks cancel
scopes when it is abandoned). The consumer only reads a bounded backlog that the command's output
sink fills. asyncio only, as the exec channel is.

Closing the stream — ``aclose()``, leaving ``async with``, breaking out of ``async for`` (the
dropped stream is cancelled when it is garbage collected) — cancels the command's task, and a
cancelled exec kills the command's process tree in the instance. ``aclose()`` returns once the
command is gone.

Backpressure: the command is never slowed down by a slow consumer (its deadline is unaffected,
and the exec's reader is never blocked). Undelivered output is held up to :data:`BACKLOG_BYTES`
(or one chunk of the exec's, when bigger); past that the oldest undelivered bytes are dropped,
and the next chunk of their stream says how many in ``OutputChunk.skipped`` — memory stays
bounded and output is never lost silently. The final :class:`ExecResult` keeps the exec's own
cap (head and tail, ``truncated=True``) whatever the consumer's pace.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import threading
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Literal

from praisonai import _limits
from praisonai._types import ExecResult, OutputChunk

#: Undelivered output a stream holds (both streams together) before it drops the oldest bytes.
BACKLOG_BYTES = _limits.DEFAULT_MAX_OUTPUT_BYTES

#: The commands' tasks: the loop keeps only weak references to tasks, and a stream that was
#: dropped (hence cancelled) must still finish killing its command.
_TASKS: set[asyncio.Task[None]] = set()

Name = Literal["stdout", "stderr"]
Sink = Callable[[Name, bytes], None]


class Backlog:
    """Output waiting for the consumer, in arrival order: at most ``limit`` bytes of it, or the
    newest chunk alone when that is bigger (a chunk is never cut as it arrives, so a consumer
    that keeps up gets every byte however the exec sizes its chunks).

    When a write would exceed the limit, the oldest bytes go, counted per stream; the count rides
    on the next chunk of that stream that is taken (or on an empty chunk at the end).
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.size = 0
        self.peak = 0  # the most bytes ever held, and the biggest chunk: tests check the bound
        self.biggest = 0
        self._chunks: collections.deque[tuple[Name, bytes]] = collections.deque()
        self._skipped: dict[Name, int] = {}

    def put(self, name: Name, data: bytes) -> None:
        if not data:
            return
        self._chunks.append((name, data))
        self.size += len(data)
        self.biggest = max(self.biggest, len(data))
        excess = self.size - max(self.limit, len(data))
        while excess > 0:
            first, old = self._chunks[0]
            cut = min(excess, len(old))
            if cut == len(old):
                self._chunks.popleft()
            else:
                self._chunks[0] = (first, old[cut:])
            self._skipped[first] = self._skipped.get(first, 0) + cut
            self.size -= cut
            excess -= cut
        self.peak = max(self.peak, self.size)

    def take(self) -> OutputChunk | None:
        """The oldest undelivered chunk, or ``None`` when there is none."""
        if not self._chunks:
            return None
        name, data = self._chunks.popleft()
        self.size -= len(data)
        return OutputChunk(name, data, skipped=self._skipped.pop(name, 0))

    def take_skip(self) -> OutputChunk | None:
        """An empty chunk for a drop that no later chunk of its stream reported (the output
        ended), or ``None``."""
        if not self._skipped:
            return None
        name = next(iter(self._skipped))
        return OutputChunk(name, b"", skipped=self._skipped.pop(name))


class _Feed:
    """What the command's task shares with the consumer. It holds no reference to the
    :class:`ExecStream`, so a stream the consumer drops is collected (and its command cancelled)
    while the command still runs."""

    def __init__(self, backlog: int) -> None:
        self.backlog = Backlog(backlog)
        self.loop = asyncio.get_running_loop()
        self.loop_thread = threading.get_ident()
        self.wakeup: asyncio.Event | None = None
        self.result: ExecResult | None = None
        self.error: BaseException | None = None
        self.finished = False  # the command's task ended
        self.closed = False  # the consumer is gone: output is no longer kept

    async def execute(self, run: Callable[[Sink], Awaitable[ExecResult]]) -> None:
        try:
            self.result = await run(self.sink)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # handed to the consumer, raised there
            self.error = exc
        finally:
            self.finished = True
            self.wake()

    def sink(self, name: Name, data: bytes) -> None:
        """Called by the exec for each chunk; never blocks (see the module's backpressure note)."""
        if threading.get_ident() == self.loop_thread:
            self.put(name, bytes(data))
        else:  # a provider that delivers output from a worker thread
            self.loop.call_soon_threadsafe(self.put, name, bytes(data))

    def put(self, name: Name, data: bytes) -> None:
        if not self.closed:
            self.backlog.put(name, data)
            self.wake()

    def wake(self) -> None:
        if self.wakeup is not None:
            self.wakeup.set()


class ExecStream:
    """Yields :class:`OutputChunk` s as the command prints them, then its :class:`ExecResult`.

    ``run(sink)`` is the exec (e.g. ``provider.execute(..., on_output=sink)``); it starts on the
    first ``__anext__`` (or ``async with``), so a stream never iterated runs nothing. Errors of
    the exec are raised by ``__anext__`` after the output that came before them.
    """

    def __init__(self, run: Callable[[Sink], Awaitable[ExecResult]], *, backlog: int = BACKLOG_BYTES) -> None:
        self._run = run
        self._backlog_limit = backlog
        self._feed: _Feed | None = None
        self._task: asyncio.Task[None] | None = None
        self._done = False  # nothing more is yielded

    @property
    def backlog(self) -> Backlog | None:
        """The undelivered output (``None`` before the command starts)."""
        return None if self._feed is None else self._feed.backlog

    def __aiter__(self) -> ExecStream:
        return self

    async def __anext__(self) -> OutputChunk | ExecResult:
        if self._done:
            raise StopAsyncIteration
        feed = self._start()
        while not self._done:  # aclose() from another task ends a waiting iteration too
            chunk = feed.backlog.take()
            if chunk is not None:
                return chunk
            if feed.finished:
                return self._last(feed)
            feed.wakeup = asyncio.Event()
            await feed.wakeup.wait()
        raise StopAsyncIteration

    def _last(self, feed: _Feed) -> OutputChunk | ExecResult:
        skip = feed.backlog.take_skip()
        if skip is not None:
            return skip
        self._done = True
        if feed.error is not None:
            error, feed.error = feed.error, None
            raise error
        if feed.result is None:  # the command was cancelled (closed from another task)
            raise StopAsyncIteration
        return feed.result

    async def aclose(self) -> None:
        """Stop yielding; if the command still runs, cancel it (killing its process tree in the
        instance) and return once it is gone. Idempotent."""
        self._done = True
        if self._feed is not None:
            self._feed.closed = True
        task = self._task
        if task is not None and not task.done():
            task.cancel()
            await asyncio.wait({task})  # never raises: the task's own outcome is not ours

    async def __aenter__(self) -> ExecStream:
        if not self._done:
            self._start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def __del__(self) -> None:
        # Breaking out of ``async for`` drops the stream without closing it: cancel the command
        # from whatever thread the garbage collector runs in.
        task, feed = self._task, self._feed
        if task is not None and feed is not None and not task.done():
            feed.closed = True
            with contextlib.suppress(RuntimeError):  # the loop has closed: its tasks are gone
                feed.loop.call_soon_threadsafe(task.cancel)

    def _start(self) -> _Feed:
        if self._feed is None:
            feed = self._feed = _Feed(self._backlog_limit)
            task = self._task = feed.loop.create_task(feed.execute(self._run), name="praisonai-stream")
            _TASKS.add(task)
            task.add_done_callback(_TASKS.discard)
        return self._feed
