"""The helper's wire format, host side: quoting requests, and splitting its replies.

A request is one line of shell code — a helper function name and its arguments, each quoted
here — so the helper needs nothing but ``read`` and ``eval``. A reply is body bytes ended by the
request's nonce, then `` <status>\\n``; the nonce is random per request, so no body can end one by
accident. Both parsers are fed from the transport's reader thread.
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

    def feed(self, data: bytes) -> None:
        with self._lock:
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
        if end < 0:
            if at:
                self._deliver(reply, bytes(buf[:at]))
                del buf[:at]
            return False
        self._deliver(reply, bytes(buf[:at]))
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
    """Cuts a byte stream into lines; ``on_line`` receives each without its newline."""

    def __init__(self, on_line: Callable[[str], None]) -> None:
        self._on_line = on_line
        self._partial = b""

    def feed(self, data: bytes) -> None:
        *lines, self._partial = (self._partial + data).split(b"\n")
        for line in lines:
            self._on_line(line.decode(errors="replace"))
