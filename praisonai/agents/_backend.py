"""``Agent(backend=...)``: an agent whose turns another object runs, as in PraisonAI.

The backend is duck-typed: anything with the two methods of :class:`AgentBackend` (for example
``praisonai.managed.ManagedAgent``, or the user's own object). The agent keeps its history.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Generator, Iterator
from typing import Protocol, runtime_checkable


@runtime_checkable
class AgentBackend(Protocol):
    """What :class:`~praisonai.agents.Agent` calls on its ``backend``.

    ``await execute(prompt)``: run one turn of the backend's conversation; returns its final text.
    ``stream_text(prompt)``: the same turn, its text as a sync iterator of pieces as they come
    (read by ``Agent.stream`` and ``start(..., stream=True)``; optional: without it they get the
    final text of ``execute`` in one piece). Closing the iterator early should end the turn.
    """

    async def execute(self, prompt: str) -> str: ...

    def stream_text(self, prompt: str) -> Iterator[str]: ...


def stream_turn(
    backend: AgentBackend, prompt: str, record: Callable[[str], object]
) -> Generator[str, None, None]:
    """The pieces of ``backend.stream_text(prompt)``; ``record(joined text)`` once they end, or
    when the caller stops early (with what came so far), but not when the backend raised."""
    pieces: list[str] = []
    stream = backend.stream_text(prompt)
    ended = False
    try:
        for piece in stream:
            pieces.append(piece)
            yield piece
        ended = True
    except GeneratorExit:
        ended = True
        raise
    finally:
        close = getattr(stream, "close", None)
        if callable(close):  # a generator the caller left early: end the backend's turn now
            with contextlib.suppress(Exception):
                close()
        if ended:
            record("".join(pieces))
