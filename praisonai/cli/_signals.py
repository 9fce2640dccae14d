"""The signals a command treats as "stop": Ctrl-C, SIGTERM and SIGHUP (their exit codes 130, 143, 129)."""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextmanager
def handling(handler: Callable[[int, FrameType | None], None]) -> Iterator[None]:
    """``handler`` answers the stop signals while the block runs; the previous handlers after."""
    previous = {number: signal.signal(number, handler) for number in STOP_SIGNALS}
    try:
        yield
    finally:
        for number, old in previous.items():
            signal.signal(number, old)
