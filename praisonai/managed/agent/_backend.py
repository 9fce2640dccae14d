"""Which backend runs a ManagedAgent's loop: here (``"local"``) or hosted (``"anthropic"``); and
PraisonAI's older values of ``provider``, which named a sandbox or a model API instead."""

from __future__ import annotations

import os
from dataclasses import dataclass

from praisonai._deprecation import warn_deprecated
from praisonai._errors import ConfigError, MissingDependencyError, UnknownProviderError
from praisonai.compute.registry import provider_class
from praisonai.managed.tools_place import one_place

HOSTED_KEYS = ("ANTHROPIC_API_KEY", "CLAUDE_API_KEY")

#: PraisonAI's older ``ManagedAgent(provider=<sandbox>)``: the loop runs here, its tools there.
SANDBOX_PROVIDERS = ("e2b", "modal", "flyio", "daytona", "docker", "tenki")

#: PraisonAI's model-API hints: the loop runs here; a model name without a prefix gets this one.
MODEL_PROVIDERS = {"openai": "", "ollama": "ollama/", "gemini": "gemini/"}


@dataclass(frozen=True)
class Backend:
    """What ``ManagedAgent(provider=, compute=)`` asked for."""

    loop: str  # "local" (this process) or "anthropic" (Claude Managed Agents)
    compute: object  # where the tools run: the compute given, or the sandbox a legacy provider named
    model_prefix: str = ""  # put before a model name that has no prefix ("ollama/")

    def model(self, name: str) -> str:
        """``name`` as this backend routes it (PraisonAI: ``provider="ollama"``, ``"llama3.1"``
        is ``"ollama/llama3.1"``)."""
        stem = self.model_prefix.rstrip("/")
        if not stem or "/" in name or name.startswith(stem):
            return name
        return self.model_prefix + name


def choose_backend(provider: str | None, compute: object) -> Backend:
    """``provider`` as given, or PraisonAI's rule for ``None``: hosted (``"anthropic"``) when
    ``ANTHROPIC_API_KEY`` or ``CLAUDE_API_KEY`` is set and no compute is named, else ``"local"``.

    ``"anthropic"`` with a compute named runs the hosted loop with its tools on that compute (a
    ``self_hosted`` environment). PraisonAI's older values, each with a ``DeprecationWarning``
    naming today's spelling, as PraisonAI warns: a sandbox (``"e2b"``, ``"docker"``, …, see
    :data:`SANDBOX_PROVIDERS`) runs the loop here with its tools on that sandbox, like
    ``compute=`` (which may name the same one); a model API (``"openai"``, ``"ollama"``,
    ``"gemini"``) runs the loop here and prefixes a bare model name as PraisonAI routes it.

    Raises:
        ConfigError: an unknown provider, or a sandbox provider and a different ``compute``.
        UnknownProviderError, MissingDependencyError: the sandbox's provider cannot be used.
    """
    if provider is None:
        hosted = compute is None and any(os.environ.get(key) for key in HOSTED_KEYS)
        return Backend("anthropic" if hosted else "local", compute)
    if provider in ("local", "anthropic"):
        return Backend(provider, compute)
    if provider in SANDBOX_PROVIDERS:
        instead = f"ManagedAgent(compute={provider!r}): the loop runs here, its tools on {provider}"
        _deprecated(provider, "the sandbox", instead)
        return Backend("local", one_place("ManagedAgent", compute=compute, provider=provider))
    if provider in MODEL_PROVIDERS:
        prefix = MODEL_PROVIDERS[provider]
        instead = f"ManagedAgent(provider='local') with model='{prefix}<name>'"
        _deprecated(provider, "the model's API", instead)
        return Backend("local", compute, prefix)
    tools = f"compute={provider!r}" if _is_compute(provider) else "compute= (a compute provider's name)"
    raise ConfigError(
        f"unknown managed provider {provider!r}: provider= names where the loop runs, 'local' or "
        f"'anthropic'; to say where its tools run write {tools}",
        op="managed",
    )


def _is_compute(name: object) -> bool:
    """Whether ``name`` names a compute provider (installed or not)."""
    try:
        provider_class(str(name))
    except UnknownProviderError:
        return False
    except MissingDependencyError:  # a provider whose SDK is not installed: still a provider
        pass
    return True


def _deprecated(provider: str, named: str, instead: str) -> None:
    message = (
        f"ManagedAgent(provider={provider!r}) is PraisonAI's older spelling, where provider named "
        f"{named}; write {instead}"
    )
    warn_deprecated(message)
