"""Which backend runs a ManagedAgent's loop: here (``"local"``) or hosted (``"anthropic"``)."""

from __future__ import annotations

import os

from praisonai._errors import ConfigError

HOSTED_KEYS = ("ANTHROPIC_API_KEY", "CLAUDE_API_KEY")
#: The hosted backend is a later piece of work; until it lands the rule falls back to local.
HOSTED_AVAILABLE = False


def choose_backend(provider: str | None, compute: object) -> str:
    """``provider`` as given, or the rule for ``None``: hosted (``"anthropic"``) when
    ``ANTHROPIC_API_KEY`` or ``CLAUDE_API_KEY`` is set and no compute is named, else ``"local"``.

    Until the hosted backend lands, ``"anthropic"`` asked for explicitly is a ConfigError, and the
    rule's hosted pick falls back to ``"local"`` (the loop runs here, on the same model).
    PraisonAI's ``"openai"`` and ``"ollama"`` also mean local (the model string says which API).
    """
    if provider is None:
        hosted = compute is None and any(os.environ.get(key) for key in HOSTED_KEYS)
        return "anthropic" if hosted and HOSTED_AVAILABLE else "local"
    if provider in ("local", "openai", "ollama"):
        return "local"
    if provider == "anthropic":
        raise ConfigError(
            "the hosted backend (provider='anthropic', Claude Managed Agents) is not available yet; "
            "use provider='local' (the loop runs here, tools on the compute you name)",
            op="managed",
        )
    raise ConfigError(f"unknown managed provider {provider!r}; use 'local' or 'anthropic'", op="managed")
