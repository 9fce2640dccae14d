"""Bounded capture of a command's output: keep the head and the tail, count what was dropped."""

from __future__ import annotations


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
