"""The contract's optional abilities, one small module per group.

| module        | methods                                             | turned on by             |
|---------------|-----------------------------------------------------|--------------------------|
| ``captures``  | ``list_captures``, ``prune_captures``, 3 ``_`` hooks | ``Capability.CAPTURE``   |
| ``processes`` | ``start/list/get/wait/kill_process``, output        | ``Capability.PROCESSES`` |
| ``sessions``  | ``open_session``                                    | ``Capability.SESSIONS``  |
| ``bound_env`` | ``bind_env``                                        | ``Capability.PROCESSES`` |
| ``run_once``  | the ``_run_once`` hook                              | implementing the hook    |
| ``pause``     | the ``Pauser`` part: ``pause``, ``resume``          | holding a ``pauser``     |
| ``ports``     | the ``_expose`` hook                                | ``Capability.PORTS``     |
| ``pty``       | the ``_open_pty`` hook (and the ``Pty`` handle)     | ``Capability.PTY``       |

Each refuses with one sentence by default (captures list nothing). A provider declares the
abilities it has in ``capabilities`` and overrides the methods; the channel mixin
(``compute.channel``) brings processes, sessions and bound env to any provider with a byte stream.
"""

from __future__ import annotations

from typing import Any

from praisonai._types import Capability, InstanceInfo
from praisonai.compute import lifecycle
from praisonai.compute.abilities.bound_env import BoundEnv
from praisonai.compute.abilities.captures import Captures, SnapshotRef
from praisonai.compute.abilities.part import Part, held, held_capabilities, part
from praisonai.compute.abilities.pause import Pauser
from praisonai.compute.abilities.ports import Ports
from praisonai.compute.abilities.processes import Processes
from praisonai.compute.abilities.pty import Pty, PtyHook
from praisonai.compute.abilities.run_once import RunOnce
from praisonai.compute.abilities.sessions import Sessions

__all__ = [
    "BoundEnv",
    "Captures",
    "OptionalAbilities",
    "Part",
    "Pauser",
    "Ports",
    "Processes",
    "Pty",
    "PtyHook",
    "RunOnce",
    "Sessions",
    "SnapshotRef",
    "held",
    "part",
]


class OptionalAbilities(Captures, Processes, Sessions, BoundEnv, RunOnce, Ports, PtyHook):
    """Every method of :class:`~praisonai.compute.base.ComputeProvider` that a provider may lack:
    the declaration of each kind of part (``compute.abilities.part``, ``None`` here) and the
    public method that checks the id, asks for the part, calls it and marks the ledger."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A class's ``capabilities`` are what it declares for its core plus what its parts bring:
        a kind of part decides its capability alone (declaring it without the part takes nothing)."""
        super().__init_subclass__(**kwargs)
        brought, decided = held_capabilities(cls)
        cls.capabilities = (frozenset(cls.capabilities) - decided) | brought

    # ---- pause: the pauser ------------------------------------------------------------------

    @part(Capability.PAUSE, held=False)
    def pauser(self) -> Pauser | None:
        """The part that pauses and resumes instances, or None: the provider cannot."""
        return None

    async def pause(self, instance_id: str) -> InstanceInfo:
        """Stop the instance keeping its filesystem; :meth:`resume` brings it back under the same
        id. Its processes end (E2B and Tenki keep memory too); its ledger row says ``paused``. Idempotent.

        Raises:
            UnsupportedFeatureError: the provider lacks ``Capability.PAUSE``.
            InstanceNotFoundError: no such instance.
        """
        self._check_id(instance_id)
        pauser = held(self.pauser, self.name, "pausing instances", "pause", Capability.PAUSE)
        info = await pauser.pause(instance_id)
        await lifecycle.mark(instance_id, "paused")
        return info

    async def resume(self, instance_id: str) -> InstanceInfo:
        """Bring a paused instance back under the same id, its files as they were; a running
        instance is returned as it is. Its ledger row says ``running`` again.

        Raises:
            UnsupportedFeatureError: the provider lacks ``Capability.PAUSE``.
            InstanceNotFoundError: no such instance.
        """
        self._check_id(instance_id)
        pauser = held(self.pauser, self.name, "resuming instances", "resume", Capability.PAUSE)
        info = await pauser.resume(instance_id)
        await lifecycle.mark(instance_id, "running")
        return info

    # ---- terminals ---------------------------------------------------------------------------

    # ---- ports: the forwarder ----------------------------------------------------------------

    # ---- egress ------------------------------------------------------------------------------

    # ---- captures ----------------------------------------------------------------------------
