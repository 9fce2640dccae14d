"""The ``openai`` SDK adapter: chat completions on any OpenAI-compatible endpoint."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Sequence
from typing import TYPE_CHECKING, Any

from praisonai._errors import MissingDependencyError
from praisonai.llm._sdk import sdk_errors
from praisonai.llm.tools import ToolCall, ToolSpec
from praisonai.llm.types import AssistantMessage, Completion, Message, ModelSpec, ToolResult, Usage

if TYPE_CHECKING:
    from openai.types import CompletionUsage
    from openai.types.chat.chat_completion_chunk import ChoiceDeltaToolCall


class OpenAIClient:
    """One ``openai.AsyncOpenAI`` client, reused for every call (see :class:`LLMClient`)."""

    def __init__(self, spec: ModelSpec, api_key: str) -> None:
        try:
            import openai
        except ImportError as exc:
            raise MissingDependencyError(
                "model access needs the openai SDK: pip install 'praisonai[llm]'", op="model"
            ) from exc
        self._openai = openai
        self._model = spec.model
        self._where = f"model {spec.model!r} at {spec.base_url or 'api.openai.com'}"
        self._client = openai.AsyncOpenAI(api_key=api_key, base_url=spec.base_url)

    async def aclose(self) -> None:
        await self._client.close()

    async def complete(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> Completion:
        with sdk_errors(self._openai, self._where):
            response = await self._client.chat.completions.create(**self._request(system, messages, tools))
        message = response.choices[0].message
        calls = tuple(
            ToolCall(id=c.id, name=c.function.name, arguments=c.function.arguments or "{}")
            for c in (message.tool_calls or ())
            if c.type == "function"
        )
        return Completion(text=message.content or "", tool_calls=calls, usage=_usage(response.usage))

    async def stream(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> AsyncGenerator[str | Completion, None]:
        """See :meth:`LLMClient.stream`; tool calls arrive in pieces keyed by their index."""
        texts: list[str] = []
        calls: dict[int, _PartialCall] = {}
        usage: CompletionUsage | None = None
        with sdk_errors(self._openai, self._where):
            chunks = await self._client.chat.completions.create(
                **self._request(system, messages, tools), stream=True, stream_options={"include_usage": True}
            )
            async with chunks:  # closes the response however this generator ends
                async for chunk in chunks:
                    usage = chunk.usage or usage  # on the last chunk, whose choices are empty
                    if not chunk.choices:
                        continue
                    delta = chunk.choices[0].delta
                    for piece in delta.tool_calls or ():
                        calls.setdefault(piece.index, _PartialCall()).add(piece)
                    if delta.content:
                        texts.append(delta.content)
                        yield delta.content
        tool_calls = tuple(call.done() for _, call in sorted(calls.items()))
        yield Completion(text="".join(texts), tool_calls=tool_calls, usage=_usage(usage))

    def _request(self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        """The arguments of ``chat.completions.create`` both ways of asking share."""
        wire: list[Any] = [{"role": "system", "content": system}, *(_message(m) for m in messages)]
        request: dict[str, Any] = {"model": self._model, "messages": wire}
        if tools:
            request["tools"] = [_tool(t) for t in tools]
        return request


class _PartialCall:
    """One tool call as its streamed pieces arrive: the first carries id and name, the rest
    fragments of the JSON arguments."""

    def __init__(self) -> None:
        self.id = ""
        self.name = ""
        self.arguments: list[str] = []

    def add(self, piece: ChoiceDeltaToolCall) -> None:
        self.id = piece.id or self.id
        if piece.function is not None:
            self.name = piece.function.name or self.name
            self.arguments.append(piece.function.arguments or "")

    def done(self) -> ToolCall:
        return ToolCall(id=self.id, name=self.name, arguments="".join(self.arguments) or "{}")


def _usage(usage: CompletionUsage | None) -> Usage:
    """Our Usage for a ``CompletionUsage`` (None when the endpoint reports none). ``prompt_tokens``
    counts the cached tokens too; they are moved to the cache fields (see :class:`Usage`)."""
    if usage is None:
        return Usage(requests=1)
    details = usage.prompt_tokens_details
    read = (details.cached_tokens or 0) if details else 0
    # cache_write_tokens: reported by some OpenAI-compatible gateways (OpenRouter), absent in old SDKs
    written = (getattr(details, "cache_write_tokens", None) or 0) if details else 0
    uncached = max(usage.prompt_tokens - read - written, 0)
    return Usage(uncached, usage.completion_tokens, 1, read, written)


def _tool(spec: ToolSpec) -> dict[str, Any]:
    function = {"name": spec.name, "description": spec.description, "parameters": dict(spec.parameters)}
    return {"type": "function", "function": function}


def _message(message: Message) -> dict[str, Any]:
    if isinstance(message, ToolResult):
        return {"role": "tool", "tool_call_id": message.call_id, "content": message.content}
    if isinstance(message, AssistantMessage):
        content = message.text or (None if message.tool_calls else "")  # an empty turn still has content
        wire: dict[str, Any] = {"role": "assistant", "content": content}
        if message.tool_calls:
            wire["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": _json(c)}}
                for c in message.tool_calls
            ]
        return wire
    return {"role": "user", "content": message.text}


def _json(call: ToolCall) -> str:
    return call.arguments if isinstance(call.arguments, str) else json.dumps(dict(call.arguments))
