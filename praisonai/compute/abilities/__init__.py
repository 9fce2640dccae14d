"""The contract's optional abilities, one small module per group.

| module        | methods                                             | turned on by             |
|---------------|-----------------------------------------------------|--------------------------|
| ``captures``  | the ``Capturer`` part: ``list/prune_captures``      | holding a ``capturer``   |
| ``processes`` | ``start/list/get/wait/kill_process``, output        | ``Capability.PROCESSES`` |
| ``sessions``  | ``open_session``                                    | ``Capability.SESSIONS``  |
| ``bound_env`` | ``bind_env``                                        | ``Capability.PROCESSES`` |
| ``run_once``  | the ``Launcher`` part (``run_once`` is the base's)  | holding a ``launcher``   |
| ``pause``     | the ``_pause`` and ``_resume`` hooks                | ``Capability.PAUSE``     |
| ``ports``     | the ``_expose`` hook                                | ``Capability.PORTS``     |
| ``pty``       | the ``_open_pty`` hook (and the ``Pty`` handle)     | ``Capability.PTY``       |

Each refuses with one sentence by default (captures list nothing). A provider declares the
abilities it has in ``capabilities`` and overrides the methods; the channel mixin
(``compute.channel``) brings processes, sessions and bound env to any provider with a byte stream.
"""

from __future__ import annotations

from typing import Any

from praisonai._types import Capability, CaptureInfo
from praisonai.compute.abilities.bound_env import BoundEnv
from praisonai.compute.abilities.captures import Capturer, SnapshotRef
from praisonai.compute.abilities.part import Part, held, held_capabilities, part
from praisonai.compute.abilities.pause import Pause
from praisonai.compute.abilities.ports import Ports
from praisonai.compute.abilities.processes import Processes
from praisonai.compute.abilities.pty import Pty, PtyHook
from praisonai.compute.abilities.run_once import Launcher
from praisonai.compute.abilities.sessions import Sessions

__all__ = [
    "BoundEnv",
    "Capturer",
    "Launcher",
    "OptionalAbilities",
    "Part",
    "Pause",
    "Ports",
    "Processes",
    "Pty",
    "PtyHook",
    "Sessions",
    "SnapshotRef",
    "held",
    "part",
]


class OptionalAbilities(Processes, Sessions, BoundEnv, Pause, Ports, PtyHook):
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

    # ---- terminals ---------------------------------------------------------------------------

    # ---- ports: the forwarder ----------------------------------------------------------------

    # ---- egress ------------------------------------------------------------------------------

    # ---- captures: the capturer, and the one-shot launcher ----------------------------------

    @part(Capability.CAPTURE, held=False)
    def capturer(self) -> Capturer | None:
        """The part that saves instances as captures and starts new ones from them, or None: the
        provider cannot (every instance then runs its own setup)."""
        return None

    async def list_captures(self) -> list[CaptureInfo]:
        """Saved post-setup states, most recently used first (none without ``capture``)."""
        capturer = self.capturer
        return [] if capturer is None else await capturer.captures()

    async def prune_captures(
        self, *, older_than_s: float | None = None, keep: int | None = None, dry_run: bool = False
    ) -> list[CaptureInfo]:
        """Remove captures unused for ``older_than_s`` seconds and all but the ``keep`` most
        recently used (those an instance still runs from stay); return what was (or would be)
        removed."""
        capturer = self.capturer
        if capturer is None:
            return []
        return await capturer.prune(older_than_s=older_than_s, keep=keep, dry_run=dry_run)

    @part(None, held=False)
    def launcher(self) -> Launcher | None:
        """The part that runs one command in an instance of its own (``run_once``), or None: the
        provider has no one-shot path (a run then provisions, executes and shuts down)."""
        return None
