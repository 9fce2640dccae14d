"""The SDK client a model spec names. Apart from ``llm`` because the adapters build on ``llm``'s
types: ``llm`` imports no adapter, so no module imports one that imports it back."""

from __future__ import annotations

from praisonai.llm.types import LLMClient, ModelSpec, api_key_for


def make_client(spec: ModelSpec) -> LLMClient:
    """A new SDK client for ``spec`` (call it on the event loop that will use it)."""
    if spec.provider == "anthropic":
        from praisonai.llm._anthropic import AnthropicClient

        return AnthropicClient(spec, api_key_for(spec))
    from praisonai.llm._openai import OpenAIClient

    return OpenAIClient(spec, api_key_for(spec))
