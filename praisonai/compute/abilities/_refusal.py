"""The one sentence every missing optional ability refuses with."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from praisonai._errors import UnsupportedFeatureError
from praisonai._types import Capability


def unsupported(provider: str, what: str, op: str, needs: Capability) -> UnsupportedFeatureError:
    """The error for a provider lacking ``needs``: ``what`` it was asked to do, for operation ``op``."""
    return UnsupportedFeatureError(
        f"the {provider} provider does not support {what} (it lacks the {needs.value!r} capability); "
        "choose one that has it: `praisonai compute providers` lists each provider's",
        op=op,
    )


class Refusal:
    """Gives an ability group the provider's ``name`` and the refusal it raises by default."""

    name: ClassVar[str]
    capabilities: frozenset[Capability]

    if TYPE_CHECKING:  # ComputeProvider writes it: refuse an id that is not one of this provider's

        def _check_id(self, instance_id: object) -> None: ...

    def _unsupported(self, what: str, op: str, needs: Capability) -> UnsupportedFeatureError:
        return unsupported(self.name, what, op, needs)
