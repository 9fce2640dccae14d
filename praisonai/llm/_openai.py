"""The ``openai`` SDK adapter: chat completions on any OpenAI-compatible endpoint."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from praisonai._errors import AuthenticationError, MissingDependencyError, ProviderUnavailableError
from praisonai.llm.tools import ToolCall, ToolSpec
from praisonai.llm.types import AssistantMessage, Completion, Message, ModelSpec, ToolResult, Usage


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
        kwargs: dict[str, Any] = {}
        if tools:
            kwargs["tools"] = [_tool(t) for t in tools]
        wire: list[Any] = [{"role": "system", "content": system}, *(_message(m) for m in messages)]
        try:
            response = await self._client.chat.completions.create(model=self._model, messages=wire, **kwargs)
        except self._openai.APIConnectionError as exc:  # includes timeouts
            raise ProviderUnavailableError(f"{self._where}: {exc}", op="model") from exc
        except self._openai.AuthenticationError as exc:
            raise AuthenticationError(f"{self._where} refused the API key: {exc}", op="model") from exc
        message = response.choices[0].message
        calls = tuple(
            ToolCall(id=c.id, name=c.function.name, arguments=c.function.arguments or "{}")
            for c in (message.tool_calls or ())
            if c.type == "function"
        )
        usage = response.usage
        spent = Usage(usage.prompt_tokens, usage.completion_tokens, 1) if usage else Usage(requests=1)
        return Completion(text=message.content or "", tool_calls=calls, usage=spent)


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
