"""Model access for the agent layer and the managed loop: model strings, one small client
interface over the official ``openai`` and ``anthropic`` SDKs, and Python callables as tools.

The SDKs (the ``llm`` extra) are imported only when a client is made (:func:`make_client`).
"""

from praisonai.llm.client import make_client
from praisonai.llm.types import (
    AssistantMessage,
    Completion,
    LLMClient,
    Message,
    ModelSpec,
    ToolResult,
    Usage,
    UserMessage,
    resolve_model,
)

__all__ = [
    "AssistantMessage",
    "Completion",
    "LLMClient",
    "Message",
    "ModelSpec",
    "ToolResult",
    "Usage",
    "UserMessage",
    "make_client",
    "resolve_model",
]
