"""Bounded capture of a command's output (keep the head and the tail, count what was dropped), and
the one place a command's result is built from it; and which characters of such output (or of any
text an instance, a model or a vendor controls) a terminal must never be sent."""

from __future__ import annotations

from typing import Final

from praisonai._types import TIMEOUT_EXIT_CODE, ExecResult

#: The characters that drive a terminal rather than show on it, defined once: C0 controls (ESC
#: starts CSI/OSC sequences that move the cursor, rewrite lines, retitle the terminal; newline and
#: tab make rows and columns), DEL, C1 controls (0x9b is a one-byte CSI), and the bidi marks,
#: overrides and isolates that make text read in an order other than stored (Trojan Source). The
#: CLI's filter (``praisonai.cli._output.safe``) neutralises them; a one-line label refuses them
#: (``praisonai.managed.text``).
TERMINAL_CONTROLS: Final = frozenset(
    [*range(32), *range(0x7F, 0xA0), 0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
)


class OutputBuffer:
    """Collects one output stream in at most about ``1.5 * limit`` bytes of memory.

    The first ``limit // 2`` bytes and the last ``limit - limit // 2`` bytes are kept; what lies
    between is replaced by one marker line when the text is read. A command printing 50 MB
    therefore costs the same memory as one printing 1 MB.
    """

    __slots__ = ("_head", "_head_size", "_tail", "_tail_size", "dropped")

    def __init__(self, limit: int) -> None:
        self._head_size = limit // 2
        self._tail_size = limit - self._head_size
        self._head = bytearray()
        self._tail = bytearray()
        self.dropped = 0

    def write(self, chunk: bytes) -> None:
        room = self._head_size - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self._tail += chunk
        # Trim only when the tail has doubled, so the amortised cost per byte stays constant.
        excess = len(self._tail) - self._tail_size
        if excess > self._tail_size:
            del self._tail[:excess]
            self.dropped += excess

    @property
    def head_size(self) -> int:
        return self._head_size

    @property
    def tail_size(self) -> int:
        return self._tail_size

    def skip(self, count: int) -> None:
        """Record ``count`` bytes that were dropped before they reached this buffer."""
        self.dropped += max(0, count)

    @property
    def truncated(self) -> bool:
        return self.dropped > 0 or len(self._tail) > self._tail_size

    def text(self) -> str:
        """The kept bytes decoded as UTF-8 (invalid sequences replaced), with the marker line."""
        excess = max(0, len(self._tail) - self._tail_size)
        dropped = self.dropped + excess
        tail = bytes(self._tail[excess:])
        if not dropped:
            return (bytes(self._head) + tail).decode("utf-8", "replace")
        marker = f"\n[… {dropped} bytes of output truncated …]\n"
        return self._head.decode("utf-8", "replace") + marker + tail.decode("utf-8", "replace")


def exec_result(
    exit_code: int | None,
    out: OutputBuffer | None = None,
    err: OutputBuffer | None = None,
    *,
    timed_out: bool = False,
) -> ExecResult:
    """The result of a command that exited with ``exit_code``, or was killed at its deadline.

    Every runner (the channel's job, the local process runner, docker's one-shot run) builds its
    result here, so the rules hold everywhere: a command killed at its timeout reports
    ``TIMEOUT_EXIT_CODE`` with ``timed_out`` whatever status the kill left (``exit_code`` may be
    ``None`` then: the status is unknown); ``truncated`` says either stream lost its middle.
    ``out``/``err`` ``None``: the output was not kept (it went to a sink only).
    """
    if timed_out:
        exit_code = TIMEOUT_EXIT_CODE
    elif exit_code is None:
        raise ValueError("a command that did not time out has an exit code")
    return ExecResult(
        stdout="" if out is None else out.text(),
        stderr="" if err is None else err.text(),
        exit_code=exit_code,
        timed_out=timed_out,
        truncated=(out is not None and out.truncated) or (err is not None and err.truncated),
    )
