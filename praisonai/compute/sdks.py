"""Whether a provider's SDK is installed: the one rule applied where a provider is named (the
registry) and where one constructed directly is first used (provisioning), so a missing SDK is
always the same sentence naming the pip extra, never an ``ImportError`` from deep inside."""

from __future__ import annotations

import importlib.util

from praisonai._errors import MissingDependencyError


def check_installed(provider: object, name: str | None = None) -> None:
    """Refuse ``provider`` (a provider class or instance) when a module of its ``requires`` cannot
    be imported. ``name``: the provider as the caller named it (default: its registered name).

    Raises:
        MissingDependencyError (ImportError): one sentence naming the modules and the pip extra.
    """
    cls = provider if isinstance(provider, type) else type(provider)
    name = name or str(getattr(cls, "name", cls.__name__))
    missing = [m for m in getattr(cls, "requires", ()) if importlib.util.find_spec(m) is None]
    if missing:
        extra = getattr(cls, "extra", "") or name
        raise MissingDependencyError(
            f"the {name} provider needs {', '.join(missing)}: pip install 'praisonai[{extra}]'"
        )
