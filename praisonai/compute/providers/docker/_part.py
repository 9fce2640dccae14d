"""A part of ``DockerEngine`` written in a module of its own (captures), mixed into it."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from praisonai.compute.providers.docker._engine import DockerEngine


class EnginePart:
    """Gives the part the engine it is mixed into, typed."""

    def _engine(self) -> DockerEngine:
        return self  # type: ignore[return-value]  # mixed into DockerEngine only
