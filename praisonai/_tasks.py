"""Work that runs beside a main task for as long as it does."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import anyio

T = TypeVar("T")
Companion = Callable[[], Coroutine[Any, Any, object]]


async def beside(main: Callable[[], Awaitable[T]], *companions: Companion) -> T:
    """``await main()`` while ``companions`` run beside it; they are cancelled once it ends. An
    error of ``main`` is raised as itself, not wrapped in a task group's ``ExceptionGroup``."""
    failure: Exception | None = None
    async with anyio.create_task_group() as tasks:
        for companion in companions:
            tasks.start_soon(companion)
        try:
            result = await main()
        except Exception as exc:
            failure = exc
        finally:
            tasks.cancel_scope.cancel()
    if failure is not None:
        raise failure
    return result
