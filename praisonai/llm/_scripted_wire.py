"""What the scripted LLM (:mod:`praisonai.llm.testing`) answers, in each API's wire form: a whole JSON
body, or the server-sent events of a streamed reply framed as the real APIs frame them (so that the
``openai`` and ``anthropic`` SDKs' own stream parsers read them).

A streamed reply is a sequence of frames, each the exact text of one SSE event, with :data:`PAUSE`
before each text delta (where the server waits ``Reply.delay_s``).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Final


@dataclass(frozen=True)
class ScriptedCall:
    """A tool call the scripted model makes."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Reply:
    """One model turn: text and/or tool calls, the usage to report for it, and how to stream it.

    Attributes:
        chunks: how many text deltas a streamed reply splits the text into (at most one a character).
        delay_s: the pause before each text delta of a streamed reply.
        cache_read_tokens: prompt tokens reported as read from the prompt cache.
        cache_write_tokens: prompt tokens reported as written to the prompt cache.

    ``input_tokens`` are the uncached prompt tokens: an OpenAI ``prompt_tokens`` is reported as their
    sum with the cache tokens, as OpenAI counts it; Anthropic reports the three apart.
    """

    text: str = ""
    calls: tuple[ScriptedCall, ...] = ()
    input_tokens: int = 10
    output_tokens: int = 5
    chunks: int = 1
    delay_s: float = 0.0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def pieces(self) -> list[str]:
        """The text as its streamed deltas: ``chunks`` pieces of near-equal length (none when empty)."""
        count = max(1, min(self.chunks, len(self.text)))
        size, extra = divmod(len(self.text), count)
        bounds = [i * size + min(i, extra) for i in range(count + 1)]
        return [self.text[a:b] for a, b in itertools.pairwise(bounds) if b > a]


PAUSE: Final = None
Frame = str | None  # an SSE event's text, or PAUSE


def openai_body(r: Reply, model: str, n: int) -> dict[str, Any]:
    """A chat.completion response for ``r`` (``n`` numbers the reply, for unique ids)."""
    calls = [
        {
            "id": _call_id(n, i),
            "type": "function",
            "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
        }
        for i, c in enumerate(r.calls)
    ]
    message: dict[str, Any] = {"role": "assistant", "content": r.text or None}
    if calls:
        message["tool_calls"] = calls
    choice = {"index": 0, "message": message, "finish_reason": _finish(r)}
    return {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [choice],
        "usage": _openai_usage(r),
    }


def openai_events(r: Reply, model: str, n: int, include_usage: bool) -> Iterator[Frame]:
    """The chat.completion.chunk stream for ``r``: a role chunk, text deltas, each tool call's
    head (id, name) then its arguments in fragments, the finish reason, the usage chunk (with
    ``include_usage``; every other chunk then says ``"usage": null``), ``[DONE]``."""
    head: dict[str, Any] = {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
    }
    if include_usage:
        head["usage"] = None

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        return _data({**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    yield chunk({"role": "assistant", "content": ""})
    for piece in r.pieces():
        yield PAUSE
        yield chunk({"content": piece})
    for i, c in enumerate(r.calls):
        function = {"name": c.name, "arguments": ""}
        yield chunk(
            {"tool_calls": [{"index": i, "id": _call_id(n, i), "type": "function", "function": function}]}
        )
        for fragment in _fragments(c):
            yield chunk({"tool_calls": [{"index": i, "function": {"arguments": fragment}}]})
    yield chunk({}, _finish(r))
    if include_usage:
        yield _data({**head, "choices": [], "usage": _openai_usage(r)})
    yield "data: [DONE]\n\n"


def anthropic_body(r: Reply, model: str, n: int) -> dict[str, Any]:
    """A Messages API response for ``r``."""
    content: list[dict[str, Any]] = [{"type": "text", "text": r.text}] if r.text else []
    content += [_tool_use(n, i, c, c.arguments) for i, c in enumerate(r.calls)]
    return {**_message(r, model, n), "content": content, "stop_reason": _stop(r)}


def anthropic_events(r: Reply, model: str, n: int) -> Iterator[Frame]:
    """The Messages API event stream for ``r``: message_start (input and cache usage), a content
    block per text and tool call (text_delta / input_json_delta deltas), message_delta (stop reason,
    output tokens), message_stop; with a ping, as the API sends one."""
    start = _message(r, model, n)
    start["usage"] = {**start["usage"], "output_tokens": 1}  # the API's count so far; the delta has the rest
    yield _event("message_start", {"message": start})
    yield _event("ping", {})
    index = 0
    if r.text:
        yield _event("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}})
        for piece in r.pieces():
            yield PAUSE
            yield _event("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": piece}})
        yield _event("content_block_stop", {"index": 0})
        index = 1
    for i, c in enumerate(r.calls):
        yield _event("content_block_start", {"index": index + i, "content_block": _tool_use(n, i, c, {})})
        for fragment in _fragments(c):
            delta = {"type": "input_json_delta", "partial_json": fragment}
            yield _event("content_block_delta", {"index": index + i, "delta": delta})
        yield _event("content_block_stop", {"index": index + i})
    stop = {"stop_reason": _stop(r), "stop_sequence": None}
    yield _event("message_delta", {"delta": stop, "usage": {"output_tokens": r.output_tokens}})
    yield _event("message_stop", {})


def _message(r: Reply, model: str, n: int) -> dict[str, Any]:
    """A Messages API message without content: what the whole body and message_start share."""
    usage = {
        "input_tokens": r.input_tokens,
        "output_tokens": r.output_tokens,
        "cache_read_input_tokens": r.cache_read_tokens,
        "cache_creation_input_tokens": r.cache_write_tokens,
    }
    return {
        "id": f"msg_{n}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }


def _openai_usage(r: Reply) -> dict[str, Any]:
    prompt = r.input_tokens + r.cache_read_tokens + r.cache_write_tokens
    # cache_write_tokens: OpenAI itself does not report it; OpenAI-compatible gateways (OpenRouter) do
    details = {"cached_tokens": r.cache_read_tokens, "cache_write_tokens": r.cache_write_tokens}
    return {
        "prompt_tokens": prompt,
        "completion_tokens": r.output_tokens,
        "total_tokens": prompt + r.output_tokens,
        "prompt_tokens_details": details,
    }


def _tool_use(n: int, i: int, call: ScriptedCall, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": f"toolu_{n}_{i}", "name": call.name, "input": arguments}


def _call_id(n: int, i: int) -> str:
    return f"call_{n}_{i}"


def _finish(r: Reply) -> str:
    return "tool_calls" if r.calls else "stop"


def _stop(r: Reply) -> str:
    return "tool_use" if r.calls else "end_turn"


def _fragments(call: ScriptedCall) -> list[str]:
    """A tool call's JSON arguments in two fragments, neither valid JSON alone, as a model streams them."""
    text = json.dumps(call.arguments)
    return [text[: len(text) // 2], text[len(text) // 2 :]]


def _data(payload: dict[str, Any]) -> str:
    return f"data: {json.dumps(payload)}\n\n"


def _event(name: str, payload: dict[str, Any]) -> str:
    return f"event: {name}\ndata: {json.dumps({'type': name, **payload})}\n\n"
