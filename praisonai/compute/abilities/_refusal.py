"""The one sentence every missing optional ability refuses with."""

from __future__ import annotations

from praisonai._errors import UnsupportedFeatureError
from praisonai._types import Capability


def unsupported(provider: str, what: str, op: str, needs: Capability) -> UnsupportedFeatureError:
    """The error for a provider lacking ``needs``: ``what`` it was asked to do, for operation ``op``."""
    return UnsupportedFeatureError(
        f"the {provider} provider does not support {what} (it lacks the {needs.value!r} capability); "
        "choose one that has it: `praisonai compute providers` lists each provider's",
        op=op,
    )
