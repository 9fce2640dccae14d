"""The contract's optional abilities, one small module per group.

| module        | methods                                             | turned on by             |
|---------------|-----------------------------------------------------|--------------------------|
| ``captures``  | ``list_captures``, ``prune_captures``, 3 ``_`` hooks | ``Capability.CAPTURE``   |
| ``processes`` | ``start/list/get/wait/kill_process``, output        | ``Capability.PROCESSES`` |
| ``sessions``  | ``open_session``                                    | ``Capability.SESSIONS``  |
| ``bound_env`` | ``bind_env``                                        | ``Capability.PROCESSES`` |
| ``run_once``  | the ``_run_once`` hook                              | implementing the hook    |
| ``pause``     | the ``_pause`` and ``_resume`` hooks                | ``Capability.PAUSE``     |
| ``ports``     | the ``_expose`` hook                                | ``Capability.PORTS``     |
| ``pty``       | the ``Terminals`` part (and the ``Pty`` handle)     | ``Capability.PTY``       |

Each refuses with one sentence by default (captures list nothing). A provider declares the
abilities it has in ``capabilities`` and overrides the methods; the channel mixin
(``compute.channel``) brings processes, sessions and bound env to any provider with a byte stream.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from praisonai._limits import PTY_DEFAULT_COLS, PTY_DEFAULT_ROWS
from praisonai._types import Capability
from praisonai.compute import _activity
from praisonai.compute.abilities.bound_env import BoundEnv
from praisonai.compute.abilities.captures import Captures, SnapshotRef
from praisonai.compute.abilities.part import Part, held, held_capabilities, part
from praisonai.compute.abilities.pause import Pause
from praisonai.compute.abilities.ports import Ports
from praisonai.compute.abilities.processes import Processes
from praisonai.compute.abilities.pty import Pty, Terminals, pty_argv, pty_size
from praisonai.compute.abilities.run_once import RunOnce
from praisonai.compute.abilities.sessions import Sessions

__all__ = [
    "BoundEnv",
    "Captures",
    "OptionalAbilities",
    "Part",
    "Pause",
    "Ports",
    "Processes",
    "Pty",
    "RunOnce",
    "Sessions",
    "SnapshotRef",
    "Terminals",
    "held",
    "part",
]


class OptionalAbilities(Captures, Processes, Sessions, BoundEnv, RunOnce, Pause, Ports):
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

    @part(Capability.PTY, held=False)
    def terminals(self) -> Terminals | None:
        """The part that opens interactive terminals in instances, or None: the provider cannot."""
        return None

    async def open_pty(
        self,
        instance_id: str,
        *,
        command: str | Sequence[str] | None = None,
        cols: int = PTY_DEFAULT_COLS,
        rows: int = PTY_DEFAULT_ROWS,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> Pty:
        """An interactive terminal in the instance running ``command`` (a string for ``sh -c``, an
        argv list, or ``None`` for a shell), under the same isolation as :meth:`execute`. Use it
        as ``async with``: closing kills its whole process tree. See :class:`Pty`.

        Raises:
            UnsupportedFeatureError: the provider lacks ``Capability.PTY``.
            ConfigError: ``cols``/``rows`` out of range.
            InstanceNotFoundError: no such instance.
        """
        self._check_id(instance_id)
        argv, (cols, rows) = pty_argv(command), pty_size(cols, rows)
        terminals = held(self.terminals, self.name, "interactive terminals", "open_pty", Capability.PTY)
        pty = await terminals.open(instance_id, argv, cols, rows, cwd, dict(env or {}))
        pty.on_activity = lambda: _activity.touch(instance_id)
        _activity.touch(instance_id)
        return pty

    # ---- ports: the forwarder ----------------------------------------------------------------

    # ---- egress ------------------------------------------------------------------------------

    # ---- captures ----------------------------------------------------------------------------
