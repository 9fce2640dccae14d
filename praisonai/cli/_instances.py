"""An instance named on the command line, found wherever it runs: the ledger, else each
provider's own list (an instance another home or host made)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from praisonai._errors import InstanceNotFoundError
from praisonai.compute import inventory

if TYPE_CHECKING:
    from praisonai.compute.base import ComputeProvider


def provider_of(instance_id: str, doing: str, op: str) -> ComputeProvider:
    """The provider that runs the instance.

    Raises:
        InvalidInstanceIdError (ValueError): ``instance_id`` is not an instance id.
        InstanceNotFoundError: it is nowhere (one sentence naming what was being ``doing``).
    """
    found = inventory.find(instance_id)
    if found is None or found.provider is None:
        why = found.reason if found is not None else "not in the ledger or in any provider's list"
        raise InstanceNotFoundError(f"no instance {instance_id!r} to {doing}: {why}", op=op)
    return found.provider
