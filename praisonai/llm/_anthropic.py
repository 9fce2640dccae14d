"""The ``anthropic`` SDK adapter: the Messages API."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from praisonai._errors import AuthenticationError, MissingDependencyError, ProviderUnavailableError
from praisonai.llm.tools import ToolCall, ToolSpec
from praisonai.llm.types import AssistantMessage, Completion, Message, ModelSpec, ToolResult, Usage

MAX_TOKENS = 4096


class AnthropicClient:
    """One ``anthropic.AsyncAnthropic`` client, reused for every call (see :class:`LLMClient`)."""

    def __init__(self, spec: ModelSpec, api_key: str) -> None:
        try:
            import anthropic
        except ImportError as exc:
            raise MissingDependencyError(
                "anthropic models need the anthropic SDK: pip install 'praisonai[llm]'", op="model"
            ) from exc
        self._anthropic = anthropic
        self._model = spec.model
        self._where = f"model {spec.model!r} at {spec.base_url or 'api.anthropic.com'}"
        self._client = anthropic.AsyncAnthropic(api_key=api_key, base_url=spec.base_url)

    async def aclose(self) -> None:
        await self._client.close()

    async def complete(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> Completion:
        kwargs: dict[str, Any] = {}
        if tools:
            kwargs["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": dict(t.parameters)}
                for t in tools
            ]
        try:
            response = await self._client.messages.create(
                model=self._model, max_tokens=MAX_TOKENS, system=system, messages=_wire(messages), **kwargs
            )
        except self._anthropic.APIConnectionError as exc:  # includes timeouts
            raise ProviderUnavailableError(f"{self._where}: {exc}", op="model") from exc
        except self._anthropic.AuthenticationError as exc:
            raise AuthenticationError(f"{self._where} refused the API key: {exc}", op="model") from exc
        texts = [block.text for block in response.content if block.type == "text"]
        calls = tuple(
            ToolCall(id=block.id, name=block.name, arguments=dict(block.input))
            for block in response.content
            if block.type == "tool_use"
        )
        usage = Usage(response.usage.input_tokens, response.usage.output_tokens, 1)
        return Completion(text="".join(texts), tool_calls=calls, usage=usage)


def _wire(messages: Sequence[Message]) -> list[Any]:
    """Messages API turns: consecutive tool results join one user turn, as the API requires."""
    wire: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, ToolResult):
            block = {"type": "tool_result", "tool_use_id": message.call_id, "content": message.content}
            if wire and wire[-1]["role"] == "user" and isinstance(wire[-1]["content"], list):
                wire[-1]["content"].append(block)
            else:
                wire.append({"role": "user", "content": [block]})
        elif isinstance(message, AssistantMessage):
            blocks: list[dict[str, Any]] = [{"type": "text", "text": message.text}] if message.text else []
            blocks += [_tool_use(c) for c in message.tool_calls]
            if not blocks:  # the API refuses an empty turn
                blocks = [{"type": "text", "text": "(no reply)"}]
            wire.append({"role": "assistant", "content": blocks})
        else:
            wire.append({"role": "user", "content": message.text})
    return wire


def _tool_use(call: ToolCall) -> dict[str, Any]:
    return {"type": "tool_use", "id": call.id, "name": call.name, "input": _input(call)}


def _input(call: ToolCall) -> dict[str, Any]:
    if isinstance(call.arguments, str):
        value = json.loads(call.arguments or "{}")
        return value if isinstance(value, dict) else {}
    return dict(call.arguments)
