"""A model API on 127.0.0.1 that misbehaves on purpose: it answers every request to the OpenAI
chat-completions and Anthropic Messages paths with ``200 text/event-stream`` and the frames it
was told to send (a real reply's frames, cut or damaged by the test), then ends as told:

- ``"close"``: closes the connection (no ``[DONE]``/``message_stop`` unless the frames had one);
- ``"hang"``: sends nothing more and keeps the connection open (headers, then silence);
- ``"ping"``: sends only keep-alives (an SSE comment for OpenAI, a ``ping`` event for Anthropic)
  every :data:`PING_EVERY_S` until the client leaves.

The real ``openai`` and ``anthropic`` SDKs read it through ``base_url`` (or ``OPENAI_BASE_URL`` /
``ANTHROPIC_BASE_URL``); frames are built from :mod:`praisonai.llm._scripted_wire`, the scripted
LLM's exact wire, so a frame the test leaves alone is one the SDK accepts.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from praisonai.llm._scripted_wire import PAUSE, Reply, anthropic_events, openai_events

End = Literal["close", "hang", "ping"]
#: Seconds between two keep-alives of the ``"ping"`` ending.
PING_EVERY_S = 0.05
KEEPALIVES = {"openai": b": keep-alive\n\n", "anthropic": b'event: ping\ndata: {"type": "ping"}\n\n'}


def frames(api: str, text: str = "partial text", **fields: Any) -> list[str]:
    """A whole streamed reply of ``api`` carrying ``text``, as SSE frames (usage included)."""
    r = Reply(text=text, **fields)
    made = openai_events(r, "m", 1, True) if api == "openai" else anthropic_events(r, "m", 1)
    return [f for f in made if f is not PAUSE]


def cut(api: str) -> list[str]:
    """A reply of ``api`` whose stream closes before its end (no finish_reason/[DONE], no
    message_stop), after the text ``"partial text"``."""
    whole = frames(api)
    return whole[:2] if api == "openai" else whole[:5]  # role + text; start, ping, block start, delta, stop


class FaultyModel:
    """The server; ``with FaultyModel() as model: model.answer(frames, end="hang")``."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.requests = 0
        self._frames: list[bytes] = []
        self._end: End = "close"
        self._limited: list[tuple[int, str]] = []  # (status, retry-after) for the next requests
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="faulty-model", daemon=True)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def answer(self, frames: Iterable[str | bytes], *, end: End = "close") -> None:
        """What every following request gets."""
        self._frames = [f.encode() if isinstance(f, str) else f for f in frames]
        self._end = end

    def limit(self, status: int, retry_after: str, *, times: int) -> None:
        """The next ``times`` requests are answered ``status`` (429, 529) with ``retry-after``."""
        self._limited = [(status, retry_after)] * times

    def __enter__(self) -> FaultyModel:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()  # ends every hanging or pinging answer
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def serve(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        handler.rfile.read(length)
        self.requests += 1
        api = "anthropic" if handler.path.rstrip("/").endswith("/messages") else "openai"
        if self._limited:
            status, wait = self._limited.pop()
            body = b'{"error": {"type": "rate_limit_error", "message": "slow down"}}'
            handler.send_response(status)
            for name, value in (("Content-Type", "application/json"), ("retry-after", wait)):
                handler.send_header(name, value)
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            handler.wfile.write(body)
            return
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Connection", "close")  # the body ends when the connection does
        handler.end_headers()
        try:
            for frame in self._frames:
                handler.wfile.write(frame)
            handler.wfile.flush()
            if self._end == "hang":
                self.stop.wait()
            while self._end == "ping" and not self.stop.wait(PING_EVERY_S):
                handler.wfile.write(KEEPALIVES[api])
                handler.wfile.flush()
        except OSError:
            pass  # the client left: what a deadline does
        handler.close_connection = True


def _handler(model: FaultyModel) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            model.serve(self)

    return Handler
