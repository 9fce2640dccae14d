"""The ``anthropic`` SDK adapter: the Messages API."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import AsyncGenerator, Sequence
from typing import TYPE_CHECKING, Any

from praisonai._errors import IncompleteReplyError, MissingDependencyError
from praisonai._limits import DEFAULT_TURN_TIMEOUT_S
from praisonai.llm._bounds import Deadline, check_type, malformed_data, response_hook
from praisonai.llm._sdk import sdk_errors
from praisonai.llm.tools import ToolCall, ToolSpec
from praisonai.llm.types import AssistantMessage, Completion, Message, ModelSpec, ToolResult, Usage

if TYPE_CHECKING:
    from anthropic.types import Message as WireMessage

MAX_TOKENS = 4096


class AnthropicClient:
    """One ``anthropic.AsyncAnthropic`` client, reused for every call (see :class:`LLMClient`)."""

    def __init__(
        self, spec: ModelSpec, api_key: str, turn_timeout_s: float | None = DEFAULT_TURN_TIMEOUT_S
    ) -> None:
        self._turn_timeout_s = turn_timeout_s
        try:
            import anthropic
        except ImportError as exc:
            raise MissingDependencyError(
                "anthropic models need the anthropic SDK: pip install 'praisonai[llm]'", op="model"
            ) from exc
        self._anthropic = anthropic
        self._model = spec.model
        hook = response_hook(sys.modules["httpx2"], lambda: self._where)
        http = anthropic.DefaultAsyncHttpxClient(event_hooks={"response": [hook]})
        self._client = anthropic.AsyncAnthropic(api_key=api_key, base_url=spec.base_url, http_client=http)
        # the endpoint in use: base_url, else ANTHROPIC_BASE_URL, else Anthropic's, as the SDK chose it
        self._where = f"model {spec.model!r} at {str(self._client.base_url).rstrip('/')}"
        self._messages = self._client.messages  # its modules load now, not in a deadline

    async def aclose(self) -> None:
        await self._client.close()

    async def complete(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> Completion:
        with sdk_errors(self._anthropic, self._where), malformed_data(self._where):
            response = await self._messages.create(**self._request(system, messages, tools))
            return _completion(response)

    async def stream(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> AsyncGenerator[str | Completion, None]:
        """See :meth:`LLMClient.stream`; the SDK's stream accumulates the final message. A reply
        is complete only with its ``message_stop``: one without it, or cut at the token limit
        (``max_tokens``), is IncompleteReplyError."""
        deadline = Deadline(self._turn_timeout_s, self._where)
        texts: list[str] = []
        stopped = False
        with sdk_errors(self._anthropic, self._where), malformed_data(self._where):
            async with contextlib.AsyncExitStack() as stack:  # closes the response however this ends
                manager = self._messages.stream(**self._request(system, messages, tools))
                events = await deadline.wait(stack.enter_async_context(manager))
                while True:
                    more, event = await deadline.next(events)
                    if not more or event is None:
                        break
                    deadline.moved()  # the SDK drops the API's keep-alive ``ping`` events unseen
                    stopped = stopped or event.type == "message_stop"
                    if event.type == "content_block_delta" and event.delta.type == "text_delta":
                        check_type(event.delta.text, str, "delta.text")
                        texts.append(event.delta.text)
                        yield event.delta.text
                message = events.current_message_snapshot if stopped else None
                completion = _completion(message) if message is not None else None
        text = "".join(texts)
        if completion is None or message is None or message.stop_reason == "max_tokens":
            raise IncompleteReplyError(f"{self._where} {_cut(stopped, text)}", partial=text)
        yield completion

    def _request(self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        """The arguments of ``messages.create`` and ``messages.stream``."""
        request: dict[str, Any] = {
            "model": self._model,
            "max_tokens": MAX_TOKENS,
            "system": system,
            "messages": _wire(messages),
        }
        if tools:
            request["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": dict(t.parameters)}
                for t in tools
            ]
        return request


def _completion(message: WireMessage) -> Completion:
    """Our Completion for a Messages API ``Message``, streamed or not."""
    texts = [block.text for block in message.content if block.type == "text"]
    calls = tuple(
        ToolCall(id=block.id, name=block.name, arguments=dict(block.input))
        for block in message.content
        if block.type == "tool_use"
    )
    spent = message.usage
    usage = Usage(
        spent.input_tokens,
        spent.output_tokens,
        1,
        spent.cache_read_input_tokens or 0,  # None when the request used no cache
        spent.cache_creation_input_tokens or 0,
    )
    return Completion("".join(texts), calls, usage, refused=message.stop_reason == "refusal")


def _cut(stopped: bool, text: str) -> str:
    """Why a reply that ``stopped`` (or not) with ``text`` is incomplete."""
    why = (
        "stopped at the model's output token limit (stop_reason max_tokens)"
        if stopped
        else "closed its stream before the reply's end (no message_stop)"
    )
    return why + (f"; its {len(text)} characters are kept, marked partial" if text else "")


def _wire(messages: Sequence[Message]) -> list[Any]:
    """Messages API turns, whose roles must alternate: consecutive tool results, and a user message
    that follows them, join one user turn (the tool_result blocks first, then the text)."""
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
        elif wire and wire[-1]["role"] == "user" and isinstance(wire[-1]["content"], list):
            # a user message after tool results: the same user turn, as roles must alternate
            if message.text:
                wire[-1]["content"].append({"type": "text", "text": message.text})
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
