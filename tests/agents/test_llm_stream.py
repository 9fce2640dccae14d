"""LLMClient.stream through the real openai and anthropic clients against the scripted LLM's SSE."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from typing import Any, TypeVar

import anyio
import pytest

from praisonai._errors import AuthenticationError, ProviderUnavailableError
from praisonai.llm import AssistantMessage, Completion, LLMClient, Message, ToolResult, Usage, UserMessage
from praisonai.llm.client import make_client
from praisonai.llm.testing import ScriptedLLM, reply, tool
from praisonai.llm.tools import ToolCall, ToolSpec
from praisonai.llm.types import resolve_model

APIS = ("openai", "anthropic")
MODELS = {"openai": "gpt-4o", "anthropic": "anthropic/claude-x"}
HI: Sequence[Message] = (UserMessage("hi"),)
ADD = ToolSpec("add", "Add two integers.", {"type": "object", "properties": {}})
T = TypeVar("T")


def _endpoint(llm: ScriptedLLM, api: str) -> dict[str, str]:
    return llm.anthropic_kwargs() if api == "anthropic" else llm.openai_kwargs()


def _run(api: str, endpoint: dict[str, str], use: Callable[[LLMClient], Awaitable[T]]) -> T:
    """``use(client)`` on a client of ``api`` at ``endpoint``, on a fresh event loop; the client is closed."""

    async def main() -> T:
        client = make_client(resolve_model(MODELS[api], **endpoint))
        try:
            return await use(client)
        finally:
            await client.aclose()

    return anyio.run(main)


async def _all(stream: AsyncIterator[str | Completion]) -> list[str | Completion]:
    return [item async for item in stream]


def _streamed(llm: ScriptedLLM, api: str, messages: Sequence[Message] = HI) -> list[str | Completion]:
    return _run(api, _endpoint(llm, api), lambda client: _all(client.stream("Be brief.", messages, [ADD])))


def _split(items: list[str | Completion]) -> tuple[list[str], Completion]:
    """The deltas and the Completion; asserts the Completion comes once, last."""
    *deltas, final = items
    assert isinstance(final, Completion)
    assert all(isinstance(d, str) for d in deltas)
    return [d for d in deltas if isinstance(d, str)], final


def _arguments(call: ToolCall) -> dict[str, Any]:
    return json.loads(call.arguments) if isinstance(call.arguments, str) else dict(call.arguments)


@pytest.mark.parametrize("api", APIS)
def test_deltas_arrive_in_order_and_join_to_the_text(llm: ScriptedLLM, api: str) -> None:
    llm.set_script([reply("The answer is forty-two.", chunks=5)])
    deltas, final = _split(_streamed(llm, api))
    assert len(deltas) == 5
    assert "".join(deltas) == final.text == "The answer is forty-two."
    assert deltas == reply("The answer is forty-two.", chunks=5).pieces()
    assert final.tool_calls == ()
    assert llm.requests[0]["stream"] is True


@pytest.mark.parametrize("api", APIS)
def test_tool_calls_and_their_arguments_survive_streaming(llm: ScriptedLLM, api: str) -> None:
    calls = (tool("add", a=2, b=3), tool("echo", text='say "hi" {now}', items=[1, {"k": None}]), tool("ls"))
    llm.set_script([reply("let me add", *calls, chunks=3)])
    deltas, final = _split(_streamed(llm, api))
    assert "".join(deltas) == final.text == "let me add"
    assert [c.name for c in final.tool_calls] == ["add", "echo", "ls"]
    assert [_arguments(c) for c in final.tool_calls] == [c.arguments for c in calls]
    assert len({c.id for c in final.tool_calls}) == 3 and all(final.tool_calls[i].id for i in range(3))


@pytest.mark.parametrize("api", APIS)
def test_a_streamed_reply_equals_the_whole_one(llm: ScriptedLLM, api: str) -> None:
    scripted = reply("both ways", tool("add", a=1, b=1), chunks=4, cache_read_tokens=7, cache_write_tokens=2)
    llm.set_script([scripted, scripted])
    endpoint = _endpoint(llm, api)
    whole = _run(api, endpoint, lambda client: client.complete("s", HI, [ADD]))
    _, streamed = _split(_streamed(llm, api))
    assert streamed.text == whole.text
    assert [(c.name, _arguments(c)) for c in streamed.tool_calls] == [
        (c.name, _arguments(c)) for c in whole.tool_calls
    ]
    assert streamed.usage == whole.usage


@pytest.mark.parametrize("api", APIS)
def test_usage_counts_cache_reads_and_writes_apart(llm: ScriptedLLM, api: str) -> None:
    spend = {"input_tokens": 11, "output_tokens": 4, "cache_read_tokens": 300, "cache_write_tokens": 50}
    llm.set_script([reply("cached", **spend), reply("cached", **spend)])
    _, final = _split(_streamed(llm, api))
    assert final.usage == Usage(11, 4, 1, 300, 50)
    assert final.usage.total_tokens == 365
    whole = _run(api, _endpoint(llm, api), lambda client: client.complete("s", HI, []))
    assert whole.usage == final.usage
    if api == "openai":  # the client asked for the usage chunk, which OpenAI sends only on request
        assert llm.requests[0]["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize("api", APIS)
def test_leaving_the_iteration_early_closes_the_connection(
    llm: ScriptedLLM, api: str, capfd: pytest.CaptureFixture[str]
) -> None:
    llm.set_script([reply("x" * 200, chunks=200, delay_s=0.2)])  # 40 s if streamed to the end

    async def first_delta(client: LLMClient) -> tuple[str | Completion, bool]:
        stream = client.stream("s", HI, [])
        async with contextlib.aclosing(stream):
            first = await anext(stream)
        # asked while the client is still open (closing it would drop its connections anyway);
        # the server notices the close during its next pause, not after 40 s of deltas
        return first, await _server_saw_disconnect(llm)

    assert _run(api, _endpoint(llm, api), first_delta) == ("x", True)
    assert "Traceback" not in capfd.readouterr().err  # the server stopped quietly


@pytest.mark.parametrize("api", APIS)
def test_cancelling_the_reader_closes_the_connection(llm: ScriptedLLM, api: str) -> None:
    llm.set_script([reply("y" * 200, chunks=200, delay_s=0.2)])

    async def cancel_after_a_delta(client: LLMClient) -> tuple[list[str | Completion], bool]:
        seen: list[str | Completion] = []
        got_one = anyio.Event()

        async def read() -> None:
            async for item in client.stream("s", HI, []):
                seen.append(item)
                got_one.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(read)
            await got_one.wait()
            tg.cancel_scope.cancel()
        return seen, await _server_saw_disconnect(llm)

    seen, disconnected = _run(api, _endpoint(llm, api), cancel_after_a_delta)
    assert seen and all(item == "y" for item in seen)  # cut off before the end, so no Completion
    assert disconnected


async def _server_saw_disconnect(llm: ScriptedLLM) -> bool:
    return await anyio.to_thread.run_sync(lambda: llm.wait_disconnects(1, timeout=10))


@pytest.mark.parametrize("api", APIS)
def test_a_refused_key_is_an_authentication_error(api: str) -> None:
    with ScriptedLLM([reply("never")], require_key="right") as strict:
        endpoint = {**_endpoint(strict, api), "api_key": "wrong"}
        with pytest.raises(AuthenticationError, match="refused the API key"):
            _run(api, endpoint, lambda client: _all(client.stream("s", HI, [])))
        assert strict.requests == []  # refused before the script was consulted


@pytest.mark.parametrize("api", APIS)
def test_nothing_listening_is_provider_unavailable(api: str) -> None:
    with ScriptedLLM() as gone:
        endpoint = _endpoint(gone, api)
    with pytest.raises(ProviderUnavailableError, match=r"model '.*' at http://127"):
        _run(api, endpoint, lambda client: _all(client.stream("s", HI, [])))


@pytest.mark.parametrize("api", APIS)
def test_a_connection_broken_mid_stream_is_provider_unavailable(api: str) -> None:
    first = {
        "openai": 'data: {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m", '
        '"choices": [{"index": 0, "delta": {"content": "par"}, "finish_reason": null}]}\n\n',
        "anthropic": 'event: message_start\ndata: {"type": "message_start", "message": {"id": "m", '
        '"type": "message", "role": "assistant", "model": "m", "content": [], "stop_reason": null, '
        '"stop_sequence": null, "usage": {"input_tokens": 1, "output_tokens": 1}}}\n\n'
        'event: content_block_start\ndata: {"type": "content_block_start", "index": 0, '
        '"content_block": {"type": "text", "text": ""}}\n\n'
        'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, '
        '"delta": {"type": "text_delta", "text": "par"}}\n\n',
    }[api]
    seen: list[str | Completion] = []

    async def read(client: LLMClient) -> None:
        async for item in client.stream("s", HI, []):
            seen.append(item)

    with _breaking_server(first) as url:
        base = url if api == "anthropic" else f"{url}/v1"
        # anthropic 2.17 wraps a stream broken mid-reply in its APIConnectionError (earlier
        # versions, and openai, raise the transport's error bare): both say what broke
        with pytest.raises(ProviderUnavailableError, match=r"broke during the reply|incomplete chunked read"):
            _run(api, {"base_url": base, "api_key": "k"}, read)
    assert seen == ["par"]


def test_anthropic_wire_joins_a_user_message_after_tool_results(llm: ScriptedLLM) -> None:
    history: Sequence[Message] = (
        UserMessage("add twice"),
        AssistantMessage("on it", (ToolCall("t1", "add", {"a": 1}), ToolCall("t2", "add", '{"a": 2}'))),
        ToolResult("t1", "add", "1"),
        ToolResult("t2", "add", "2"),
        UserMessage("and now stop"),
    )
    llm.set_script([reply("ok", chunks=2)])
    _, final = _split(_streamed(llm, "anthropic", history))
    assert final.text == "ok"
    wire = llm.requests[0]["messages"]
    assert [turn["role"] for turn in wire] == ["user", "assistant", "user"]
    assert wire[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "t1", "content": "1"},
        {"type": "tool_result", "tool_use_id": "t2", "content": "2"},
        {"type": "text", "text": "and now stop"},
    ]
    assert wire[1]["content"][1:] == [
        {"type": "tool_use", "id": "t1", "name": "add", "input": {"a": 1}},
        {"type": "tool_use", "id": "t2", "name": "add", "input": {"a": 2}},
    ]


@contextlib.contextmanager
def _breaking_server(first_events: str) -> Iterator[str]:
    """An HTTP server on 127.0.0.1 that starts one SSE reply with ``first_events`` and then drops the
    connection mid-body (the chunked body never ends), as a provider that fails mid-stream does."""
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        with contextlib.suppress(OSError), listener.accept()[0] as conn:
            request = b""
            while b"\r\n\r\n" not in request:
                request += conn.recv(65536)
            head, _, body = request.partition(b"\r\n\r\n")
            length = next(
                int(line.split(b":", 1)[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            while len(body) < length:
                body += conn.recv(65536)
            data = first_events.encode()
            conn.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
                + b"%x\r\n%s\r\n" % (len(data), data)
            )
            # closing now leaves the chunked body unfinished: the client reads the events, then the break

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        listener.close()
        thread.join(timeout=10)
