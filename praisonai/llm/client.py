"""The SDK client a model spec names. Apart from ``llm`` because the adapters build on ``llm``'s
types: ``llm`` imports no adapter, so no module imports one that imports it back."""

from __future__ import annotations

from praisonai._limits import DEFAULT_TURN_TIMEOUT_S
from praisonai.llm.types import LLMClient, ModelSpec, api_key_for


def make_client(spec: ModelSpec, *, turn_timeout_s: float | None = DEFAULT_TURN_TIMEOUT_S) -> LLMClient:
    """A new SDK client for ``spec`` (call it on the event loop that will use it). A streamed
    reply that sends nothing new for ``turn_timeout_s`` seconds (``None``: no deadline) ends in
    :class:`~praisonai._errors.RemoteTimeoutError`."""
    if spec.provider == "anthropic":
        from praisonai.llm._anthropic import AnthropicClient

        return AnthropicClient(spec, api_key_for(spec), turn_timeout_s)
    from praisonai.llm._openai import OpenAIClient

    return OpenAIClient(spec, api_key_for(spec), turn_timeout_s)
