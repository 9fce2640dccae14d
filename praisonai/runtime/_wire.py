"""The helper's wire format, host side: quoting requests, and splitting its replies.

A request is one line of shell code — a helper function name and its arguments, each quoted
here — so the helper needs nothing but ``read`` and ``eval``. A reply is body bytes ended by the
request's nonce, then `` <status>\\n``; the nonce is random per request, so no body can end one by
accident. Both parsers are fed from the transport's reader thread, and both hold a bounded
amount whatever arrives: a command can write to the helper's stdout and stderr
(``/proc/<pid>/fd/1``, ``2``) while it runs as the helper's user.
"""

from __future__ import annotations

import collections
import secrets
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from praisonai._errors import ConfigError

#: The helper defines this variable as a newline; quoted newlines are spliced in through it,
#: because a request must stay on one line.
_NEWLINE_VAR = "'\"$__p_nl\"'"


def quote(value: str) -> str:
    """``value`` as one single-quoted shell word that fits on one line."""
    if "\0" in value:
        raise ConfigError("commands, paths and environment values cannot contain NUL bytes", op="exec")
    return "'" + value.replace("'", "'\\''").replace("\n", _NEWLINE_VAR) + "'"


def request_line(function: str, nonce: str, *args: str) -> bytes:
    return " ".join([function, nonce, *map(quote, args)]).encode() + b"\n"


def assignments(env: Mapping[str, str]) -> list[str]:
    """``NAME=value`` words for the helper's ``export``."""
    return [f"{key}={value}" for key, value in env.items()]


#: The longest line the helper writes on stderr is a tool's complaint naming a path or two (each at
#: most PATH_MAX, 4096 bytes); its end notices are under 100 bytes. A longer line is not the
#: helper's: it is dropped as it arrives, never kept whole.
MAX_LINE = 16 << 10
#: A reply's status is a word or a few numbers ("done 137 3", a pid); a longer one is not the helper's.
MAX_STATUS = 256


def new_nonce() -> str:
    return "@pz" + secrets.token_hex(16)


BodySink = Callable[[bytes], None]
Done = Callable[[str | BaseException, bytes], None]


@dataclass(eq=False)
class PendingReply:
    """A reply the helper owes: its body goes to ``sink`` (or is collected), then ``done`` runs."""

    nonce: bytes
    done: Done
    sink: BodySink | None = None
    body: bytearray = field(default_factory=bytearray)


class ReplyParser:
    """Splits the helper's stdout into replies, in the order the requests were written."""

    def __init__(self) -> None:
        self._pending: collections.deque[PendingReply] = collections.deque()
        self._buffer = bytearray()
        self._skipping = False  # dropping what is left of a status line too long to be one
        self._lock = threading.Lock()

    def expect(self, reply: PendingReply) -> None:
        """Register a reply; call under the same lock that orders the request writes."""
        with self._lock:
            self._pending.append(reply)

    def retract(self, reply: PendingReply) -> None:
        """Take back the last registered reply: its request was not sent after all."""
        with self._lock:
            if self._pending and self._pending[-1] is reply:
                self._pending.pop()

    @property
    def buffered(self) -> int:
        """Bytes held while waiting for the rest of a reply's end: at most a nonce and a status."""
        return len(self._buffer)

    def feed(self, data: bytes) -> None:
        with self._lock:
            if self._skipping:  # the rest of an overlong status line
                cut = data.find(b"\n")
                if cut < 0:
                    return
                data, self._skipping = data[cut + 1 :], False
            self._buffer += data
            while self._pending and self._step(self._pending[0]):
                self._pending.popleft()
            if not self._pending and self._buffer:
                self._buffer.clear()  # stray output nobody asked for (cannot happen by protocol)

    def _step(self, reply: PendingReply) -> bool:
        """Consume what the head reply can take; True when it is complete."""
        buf, nonce = self._buffer, reply.nonce
        at = buf.find(nonce)
        if at < 0:
            keep = len(nonce) - 1  # the buffer may end with the start of the nonce
            if len(buf) > keep:
                self._deliver(reply, bytes(buf[: len(buf) - keep]))
                del buf[: len(buf) - keep]
            return False
        end = buf.find(b"\n", at)
        if end < 0 and len(buf) - at - len(nonce) <= MAX_STATUS:
            if at:
                self._deliver(reply, bytes(buf[:at]))
                del buf[:at]
            return False
        self._deliver(reply, bytes(buf[:at]))
        if end < 0:  # no status is that long: the reply ends here, with a status nobody accepts
            status = buf[at + len(nonce) : at + len(nonce) + MAX_STATUS].decode(errors="replace").strip()
            buf.clear()
            self._skipping = True
        else:
            status = buf[at + len(nonce) : end].decode(errors="replace").strip()
            del buf[: end + 1]
        reply.done(status, bytes(reply.body))
        return True

    @staticmethod
    def _deliver(reply: PendingReply, chunk: bytes) -> None:
        if not chunk:
            return
        if reply.sink is not None:
            reply.sink(chunk)
        else:
            reply.body += chunk

    def fail(self, error: BaseException) -> None:
        """The channel closed: every reply still owed fails with ``error``."""
        with self._lock:
            pending, self._pending = list(self._pending), collections.deque()
        for reply in pending:
            reply.done(error, b"")


class LineSplitter:
    """Cuts a byte stream into lines; ``on_line`` receives each without its newline. A line longer
    than ``max_line`` is dropped up to its newline as it arrives: at most ``max_line`` bytes are
    ever held, and each byte is looked at once."""

    def __init__(self, on_line: Callable[[str], None], max_line: int = MAX_LINE) -> None:
        self._on_line = on_line
        self._max_line = max_line
        self._partial = bytearray()
        self._dropping = False  # within a line that is too long: it goes up to its newline

    @property
    def buffered(self) -> int:
        """Bytes held of a line whose newline has not come yet."""
        return len(self._partial)

    def feed(self, data: bytes) -> None:
        start = 0
        while (end := data.find(b"\n", start)) >= 0:
            if not self._dropping and len(self._partial) + end - start <= self._max_line:
                self._on_line((self._partial + data[start:end]).decode(errors="replace"))
            self._partial.clear()
            self._dropping = False
            start = end + 1
        if self._dropping or len(self._partial) + len(data) - start > self._max_line:
            self._partial.clear()
            self._dropping = True
        else:
            self._partial += data[start:]
