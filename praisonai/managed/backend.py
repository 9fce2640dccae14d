"""Which backend runs a ManagedAgent's loop: here (``"local"``) or hosted (``"anthropic"``)."""

from __future__ import annotations

import os

from praisonai._errors import ConfigError

HOSTED_KEYS = ("ANTHROPIC_API_KEY", "CLAUDE_API_KEY")


def choose_backend(provider: str | None, compute: object) -> str:
    """``provider`` as given, or PraisonAI's rule for ``None``: hosted (``"anthropic"``) when
    ``ANTHROPIC_API_KEY`` or ``CLAUDE_API_KEY`` is set and no compute is named, else ``"local"``.

    ``"anthropic"`` with a compute named runs the hosted loop with its tools on that compute (a
    ``self_hosted`` environment). PraisonAI's ``"openai"`` and ``"ollama"`` mean local (the
    model string says which API).
    """
    if provider is None:
        hosted = compute is None and any(os.environ.get(key) for key in HOSTED_KEYS)
        return "anthropic" if hosted else "local"
    if provider in ("local", "openai", "ollama"):
        return "local"
    if provider == "anthropic":
        return "anthropic"
    raise ConfigError(f"unknown managed provider {provider!r}; use 'local' or 'anthropic'", op="managed")
