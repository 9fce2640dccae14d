"""A scripted LLM on 127.0.0.1 for tests: OpenAI chat-completions and Anthropic Messages, over HTTP.

The real ``openai`` / ``anthropic`` clients talk to it through ``base_url``; the script decides what
the "model" answers, text or tool calls. No network leaves the machine::

    with ScriptedLLM([reply(tool("add", a=1, b=2)), reply("3")]) as llm:
        agent = Agent("calc", tools=[add], model="gpt-4o-mini", **llm.openai_kwargs())
        assert agent.start("1+2?") == "3"
        llm.requests[1]  # the JSON body of the second request (it carries the tool result)

The script is either a list of :class:`Reply` (served in order, for both APIs together) or a
function ``(path, request_body) -> Reply`` (for concurrent callers, whose order is not fixed).
Running out of script answers HTTP 400 with a message saying so (400 is not retried by the SDKs).
With ``require_key=...`` a request carrying another key is refused with 401, as a real API would.

A request with ``"stream": true`` is answered with server-sent events in that API's framing, the
text split into ``Reply.chunks`` deltas with ``Reply.delay_s`` before each; a client that leaves
mid-stream is noticed at once (during a delay) and counted in :attr:`ScriptedLLM.disconnects`.
"""

from __future__ import annotations

import json
import select
import socket
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from praisonai.llm._scripted_wire import (
    PAUSE,
    Frame,
    Reply,
    ScriptedCall,
    anthropic_body,
    anthropic_events,
    openai_body,
    openai_events,
)

__all__ = ["API_KEY", "Reply", "Script", "ScriptedCall", "ScriptedLLM", "reply", "tool"]

API_KEY = "test-key"


def tool(name: str, **arguments: Any) -> ScriptedCall:
    """A scripted call of tool ``name`` with ``arguments``."""
    return ScriptedCall(name, arguments)


def reply(
    *parts: str | ScriptedCall,
    input_tokens: int = 10,
    output_tokens: int = 5,
    chunks: int = 1,
    delay_s: float = 0.0,
    cache_read_tokens: int = 0,
    cache_write_tokens: int = 0,
) -> Reply:
    """A reply made of text parts and tool calls, e.g. ``reply("let me look", tool("ls"))``; the
    keywords are :class:`Reply`'s."""
    text = "".join(p for p in parts if isinstance(p, str))
    calls = tuple(p for p in parts if isinstance(p, ScriptedCall))
    return Reply(
        text, calls, input_tokens, output_tokens, chunks, delay_s, cache_read_tokens, cache_write_tokens
    )


Script = Sequence[Reply] | Callable[[str, dict[str, Any]], Reply]


class ScriptedLLM:
    """The server; a context manager (``start()``/``close()`` otherwise). Thread-safe.

    Attributes:
        requests: every request body received, in arrival order.
        paths: the path of each request (``/v1/chat/completions`` or ``/v1/messages``).
        api_keys: the key each request carried (``Authorization: Bearer`` or ``x-api-key``).
        disconnects: how many streamed replies their client left before the end.
    """

    def __init__(self, script: Script = (), *, require_key: str | None = None) -> None:
        self._script = script if callable(script) else list(script)
        self._lock = threading.Lock()
        self._served = 0
        self.require_key = require_key
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.api_keys: list[str] = []
        self.disconnects = 0
        self._disconnected = threading.Condition(self._lock)
        self._server = _Server(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="scripted-llm", daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def openai_kwargs(self) -> dict[str, str]:
        """``base_url`` and ``api_key`` for an Agent on an OpenAI-compatible model."""
        return {"base_url": f"{self.url}/v1", "api_key": API_KEY}

    def anthropic_kwargs(self) -> dict[str, str]:
        """``base_url`` and ``api_key`` for an Agent on an ``anthropic/…`` model."""
        return {"base_url": self.url, "api_key": API_KEY}

    def start(self) -> ScriptedLLM:
        self._thread.start()
        return self

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def __enter__(self) -> ScriptedLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def set_script(self, script: Script) -> None:
        """Replace the script (a list restarts at its first reply)."""
        with self._lock:
            self._script = script if callable(script) else list(script)
            self._served = 0

    def next_reply(self, path: str, body: dict[str, Any], api_key: str = "") -> Reply | None:
        """Record the request and return the reply for it, or None when the script is exhausted."""
        with self._lock:
            self.requests.append(body)
            self.paths.append(path)
            self.api_keys.append(api_key)
            script = self._script
            if not callable(script):
                if self._served >= len(script):
                    return None
                self._served += 1
                return script[self._served - 1]
        return script(path, body)

    def wait_disconnects(self, count: int = 1, timeout: float = 10.0) -> bool:
        """Wait until ``count`` streamed replies were cut off by their client; False on timeout."""
        with self._disconnected:
            return self._disconnected.wait_for(lambda: self.disconnects >= count, timeout)

    def _record_disconnect(self) -> None:
        with self._disconnected:
            self.disconnects += 1
            self._disconnected.notify_all()


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up (a cancelled stream, a closed SDK client) is no error worth a
        traceback on stderr; anything else still is."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def _handler(llm: ScriptedLLM) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            path = self.path.split("?", 1)[0]
            anthropic = path.endswith("/messages")
            if not (anthropic or path.endswith("/chat/completions")):
                return self._send(404, {"error": {"type": "not_found", "message": f"no route {path}"}})
            bearer = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
            key = self.headers.get("x-api-key") or bearer
            if llm.require_key is not None and key != llm.require_key:
                error = {"type": "authentication_error", "message": "invalid x-api-key"}
                return self._send(401, {"type": "error", "error": error})
            r = llm.next_reply(path, body, key)
            if r is None:
                error = {"type": "invalid_request_error", "message": "scripted LLM: the script is exhausted"}
                return self._send(400, {"type": "error", "error": error})
            model, n = str(body.get("model", "")), len(llm.requests)
            if body.get("stream"):
                usage = bool((body.get("stream_options") or {}).get("include_usage"))
                frames = anthropic_events(r, model, n) if anthropic else openai_events(r, model, n, usage)
                return self._stream(frames, r.delay_s)
            build = anthropic_body if anthropic else openai_body
            self._send(200, build(r, model, n))

        def _stream(self, frames: Iterable[Frame], delay_s: float) -> None:
            """Send ``frames`` as a chunked text/event-stream; a client that leaves ends it quietly."""
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            try:
                for frame in frames:
                    if frame is PAUSE:
                        if delay_s > 0 and _left_within(self.connection, delay_s):
                            raise ConnectionAbortedError("the client left")
                        continue
                    data = frame.encode()
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.write(b"0\r\n\r\n")
            except OSError:  # BrokenPipeError, ConnectionResetError, ConnectionAbortedError
                self.close_connection = True
                llm._record_disconnect()

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


def _left_within(connection: socket.socket, timeout: float) -> bool:
    """Wait up to ``timeout``; True as soon as the peer closes the connection (a readable socket
    with nothing to read). A client sends nothing while its reply streams, so that is the only
    reason it becomes readable."""
    poller = select.poll()  # not select(): the test process may hold descriptors past 1023
    poller.register(connection, select.POLLIN)
    return bool(poller.poll(timeout * 1000)) and connection.recv(1, socket.MSG_PEEK) == b""
