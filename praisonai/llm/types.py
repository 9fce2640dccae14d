"""Which LLM a model string names, and the one small interface the agent loop talks to.

Model strings:

- ``gpt-4o-mini`` (no prefix), ``openai/gpt-4o``: OpenAI (``OPENAI_API_KEY``), or any
  OpenAI-compatible endpoint given as ``base_url``;
- ``ollama/llama3.1``: Ollama's OpenAI-compatible API, ``base_url`` default
  ``http://localhost:11434/v1`` (``OLLAMA_BASE_URL`` overrides), no key needed;
- ``anthropic/claude-…`` (or a bare ``claude-…``): Anthropic (``ANTHROPIC_API_KEY``);
- any other ``prefix/name`` with an explicit ``base_url``: sent verbatim to that OpenAI-compatible
  endpoint (OpenRouter, vLLM, …); without ``base_url`` it is an error listing the known prefixes.

The SDKs (the ``llm`` extra) are imported only when a client is made.
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from praisonai._errors import ConfigError
from praisonai.llm.tools import ToolCall, ToolSpec

Provider = Literal["openai", "anthropic"]
KNOWN_PREFIXES = ("openai", "anthropic", "ollama")
OLLAMA_BASE_URL = "http://localhost:11434/v1"
_KEY_ENV: dict[Provider, str] = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


@dataclass(frozen=True)
class Usage:
    """Tokens spent; ``a + b`` sums two usages.

    The input is split as Anthropic counts it, for both APIs: ``input_tokens`` are the uncached
    prompt tokens, ``cache_read_tokens`` the ones served from the provider's prompt cache and
    ``cache_write_tokens`` the ones written to it (an OpenAI ``prompt_tokens`` includes the cached
    ones; the OpenAI adapter subtracts them), so the three add up to the whole prompt.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.requests + other.requests,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )

    @property
    def total_tokens(self) -> int:
        """Every token of the prompts (cached or not) and of the replies."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens + self.output_tokens


@dataclass(frozen=True)
class UserMessage:
    text: str


@dataclass(frozen=True)
class AssistantMessage:
    text: str
    tool_calls: tuple[ToolCall, ...] = ()


@dataclass(frozen=True)
class ToolResult:
    call_id: str
    name: str
    content: str


Message = UserMessage | AssistantMessage | ToolResult


@dataclass(frozen=True)
class Completion:
    """One model reply: its text, the tool calls it asks for, what it cost, and whether the model
    (or its provider's filter) refused to answer (OpenAI's ``content_filter``, Anthropic's
    ``refusal``)."""

    text: str
    tool_calls: tuple[ToolCall, ...]
    usage: Usage
    refused: bool = False


class LLMClient(Protocol):
    """One long-lived SDK client bound to a model; used on praisonai's portal loop only."""

    async def complete(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> Completion:
        """One model request, answered whole."""
        ...

    def stream(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> AsyncGenerator[str | Completion, None]:
        """One model request, streamed: its text deltas as they arrive, then exactly one
        :class:`Completion` (what :meth:`complete` would return for the same reply).

        Leaving the iteration early closes the HTTP response at once when the generator is closed:
        iterate it under ``contextlib.aclosing`` (or call its ``aclose()``); cancelling the task
        that iterates it closes the response as the cancellation unwinds.
        """
        ...

    async def aclose(self) -> None:
        """Close the client's connections."""


@dataclass(frozen=True)
class ModelSpec:
    """A resolved model string: which SDK, which model name, which endpoint and key."""

    provider: Provider
    model: str
    base_url: str | None = None
    api_key: str | None = None
    key_required: bool = True

    def __repr__(self) -> str:  # never print the key
        return f"ModelSpec({self.provider!r}, {self.model!r}, base_url={self.base_url!r})"


def resolve_model(model: str, *, base_url: str | None = None, api_key: str | None = None) -> ModelSpec:
    """Resolve ``model`` (see the module docstring); raises ConfigError for an unknown prefix."""
    prefix, _, name = model.partition("/") if "/" in model else ("", "", model)
    if prefix == "anthropic" or (not prefix and model.startswith("claude")):
        return ModelSpec("anthropic", name, base_url, api_key, key_required=base_url is None)
    if prefix == "ollama":
        url = base_url or os.environ.get("OLLAMA_BASE_URL") or OLLAMA_BASE_URL
        return ModelSpec("openai", name, url, api_key or "ollama", key_required=False)
    if prefix == "openai" or not prefix:
        return ModelSpec("openai", name, base_url, api_key, key_required=base_url is None)
    if base_url is not None:
        return ModelSpec("openai", model, base_url, api_key, key_required=False)
    raise ConfigError(
        f"unknown model prefix {prefix!r} in {model!r}; known prefixes: {', '.join(KNOWN_PREFIXES)} "
        "(or pass base_url= to send any model name to an OpenAI-compatible endpoint)",
        op="model",
    )


def api_key_for(spec: ModelSpec) -> str:
    """The key to use: the explicit one, else the provider's env var; ConfigError naming it if needed."""
    env = _KEY_ENV[spec.provider]
    key = spec.api_key or os.environ.get(env)
    if key:
        return key
    if spec.key_required:
        raise ConfigError(
            f"no API key for {spec.provider} model {spec.model!r}: set {env} or pass api_key=", op="model"
        )
    return "not-needed"  # local endpoints (Ollama, vLLM) ignore it, but the SDKs insist on one
