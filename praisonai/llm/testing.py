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
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

API_KEY = "test-key"


@dataclass(frozen=True)
class ScriptedCall:
    """A tool call the scripted model makes."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Reply:
    """One model turn: text and/or tool calls, and the usage to report for it."""

    text: str = ""
    calls: tuple[ScriptedCall, ...] = ()
    input_tokens: int = 10
    output_tokens: int = 5


def tool(name: str, **arguments: Any) -> ScriptedCall:
    """A scripted call of tool ``name`` with ``arguments``."""
    return ScriptedCall(name, arguments)


def reply(*parts: str | ScriptedCall, input_tokens: int = 10, output_tokens: int = 5) -> Reply:
    """A reply made of text parts and tool calls, e.g. ``reply("let me look", tool("ls"))``."""
    text = "".join(p for p in parts if isinstance(p, str))
    calls = tuple(p for p in parts if isinstance(p, ScriptedCall))
    return Reply(text, calls, input_tokens, output_tokens)


Script = Sequence[Reply] | Callable[[str, dict[str, Any]], Reply]


class ScriptedLLM:
    """The server; a context manager (``start()``/``close()`` otherwise). Thread-safe.

    Attributes:
        requests: every request body received, in arrival order.
        paths: the path of each request (``/v1/chat/completions`` or ``/v1/messages``).
        api_keys: the key each request carried (``Authorization: Bearer`` or ``x-api-key``).
    """

    def __init__(self, script: Script = (), *, require_key: str | None = None) -> None:
        self._script = script if callable(script) else list(script)
        self._lock = threading.Lock()
        self._served = 0
        self.require_key = require_key
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.api_keys: list[str] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
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


def openai_body(r: Reply, model: str, n: int) -> dict[str, Any]:
    """A chat.completion response for ``r``."""
    calls = [
        {"id": f"call_{n}_{i}", "type": "function",
         "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
        for i, c in enumerate(r.calls)
    ]  # fmt: skip
    message: dict[str, Any] = {"role": "assistant", "content": r.text or None}
    if calls:
        message["tool_calls"] = calls
    usage = {"prompt_tokens": r.input_tokens, "completion_tokens": r.output_tokens,
             "total_tokens": r.input_tokens + r.output_tokens}  # fmt: skip
    choice = {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
    return {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": 0, "model": model,
            "choices": [choice], "usage": usage}  # fmt: skip


def anthropic_body(r: Reply, model: str, n: int) -> dict[str, Any]:
    """A Messages API response for ``r``."""
    content: list[dict[str, Any]] = [{"type": "text", "text": r.text}] if r.text else []
    content += [
        {"type": "tool_use", "id": f"toolu_{n}_{i}", "name": c.name, "input": c.arguments}
        for i, c in enumerate(r.calls)
    ]
    return {"id": f"msg_{n}", "type": "message", "role": "assistant", "model": model, "content": content,
            "stop_reason": "tool_use" if r.calls else "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": r.input_tokens, "output_tokens": r.output_tokens}}  # fmt: skip


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
            build = anthropic_body if anthropic else openai_body
            self._send(200, build(r, str(body.get("model", "")), len(llm.requests)))

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
