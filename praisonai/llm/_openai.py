"""The ``openai`` SDK adapter: chat completions on any OpenAI-compatible endpoint."""

from __future__ import annotations

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
    from openai.types import CompletionUsage
    from openai.types.chat.chat_completion_chunk import ChoiceDeltaToolCall


class OpenAIClient:
    """One ``openai.AsyncOpenAI`` client, reused for every call (see :class:`LLMClient`)."""

    def __init__(
        self, spec: ModelSpec, api_key: str, turn_timeout_s: float | None = DEFAULT_TURN_TIMEOUT_S
    ) -> None:
        self._turn_timeout_s = turn_timeout_s
        try:
            import openai
        except ImportError as exc:
            raise MissingDependencyError(
                "model access needs the openai SDK: pip install 'praisonai[llm]'", op="model"
            ) from exc
        self._openai = openai
        self._model = spec.model
        hook = response_hook(sys.modules["httpx"], lambda: self._where)
        http = openai.DefaultAsyncHttpxClient(event_hooks={"response": [hook]})
        self._client = openai.AsyncOpenAI(api_key=api_key, base_url=spec.base_url, http_client=http)
        # the endpoint in use: base_url, else OPENAI_BASE_URL, else OpenAI's, as the SDK chose it
        self._where = f"model {spec.model!r} at {str(self._client.base_url).rstrip('/')}"
        self._completions = self._client.chat.completions  # its modules load now, not in a deadline

    async def aclose(self) -> None:
        await self._client.close()

    async def complete(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> Completion:
        with sdk_errors(self._openai, self._where), malformed_data(self._where):
            response = await self._completions.create(**self._request(system, messages, tools))
            message = response.choices[0].message
            calls = tuple(
                ToolCall(id=c.id, name=c.function.name, arguments=c.function.arguments or "{}")
                for c in (message.tool_calls or ())
                if c.type == "function"
            )
            text = message.content or ""
            check_type(text, str, "message.content")
            return Completion(text=text, tool_calls=calls, usage=_usage(response.usage))

    async def stream(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> AsyncGenerator[str | Completion, None]:
        """See :meth:`LLMClient.stream`; tool calls arrive in pieces keyed by their index. A reply
        is complete only with its ``finish_reason`` (the SDK hides ``[DONE]``): one without it, or
        cut at the token limit (``length``), is IncompleteReplyError."""
        reply = _Reply()
        deadline = Deadline(self._turn_timeout_s, self._where)
        request = self._request(system, messages, tools)
        with sdk_errors(self._openai, self._where), malformed_data(self._where):
            chunks = await deadline.wait(
                self._completions.create(**request, stream=True, stream_options={"include_usage": True})
            )
            async with chunks:  # closes the response however this generator ends
                while True:
                    more, chunk = await deadline.next(chunks)
                    if not more:
                        break
                    deadline.moved()
                    text = reply.add(chunk)
                    if text:
                        yield text
        yield reply.done(self._where)

    def _request(self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        """The arguments of ``chat.completions.create`` both ways of asking share."""
        wire: list[Any] = [{"role": "system", "content": system}, *(_message(m) for m in messages)]
        request: dict[str, Any] = {"model": self._model, "messages": wire}
        if tools:
            request["tools"] = [_tool(t) for t in tools]
        return request


class _Reply:
    """A streamed reply as its chunks arrive: text, tool calls, usage and how it finished."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.calls: dict[int, _PartialCall] = {}
        self.usage: CompletionUsage | None = None
        self.finish: str | None = None
        self.choices = 0  # chunks that carried a choice

    def add(self, chunk: Any) -> str:
        """Take one chunk; its text, if any (a field of the wrong type is a TypeError)."""
        self.usage = chunk.usage or self.usage  # on the last chunk, whose choices are empty
        check_type(chunk.choices, list, "choices")
        if not chunk.choices:
            return ""
        self.choices += 1
        choice = chunk.choices[0]
        self.finish = choice.finish_reason or self.finish
        check_type(choice.delta.tool_calls or [], list, "delta.tool_calls")
        for piece in choice.delta.tool_calls or ():
            check_type(piece.index, int, "tool_calls[].index")
            self.calls.setdefault(piece.index, _PartialCall()).add(piece)
        text = choice.delta.content or ""
        check_type(text, str, "delta.content")
        self.texts.append(text)
        return text

    def done(self, where: str) -> Completion:
        """The Completion, or IncompleteReplyError (with the text that came) when the reply was cut."""
        text = "".join(self.texts)
        if self.finish is None or self.finish == "length":
            if self.finish == "length":
                why = "stopped at the model's output token limit (finish_reason length)"
            elif self.choices:
                why = "closed its stream before the reply's end (no finish_reason)"
            else:
                why = "answered with no choices"
            kept = f"; its {len(text)} characters are kept, marked partial" if text else ""
            raise IncompleteReplyError(f"{where} {why}{kept}", partial=text)
        tool_calls = tuple(call.done() for _, call in sorted(self.calls.items()))
        refused = self.finish == "content_filter"
        return Completion(text=text, tool_calls=tool_calls, usage=_usage(self.usage), refused=refused)


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
