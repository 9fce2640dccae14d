"""How a provider holds an optional ability: as a *part*, an object of its own built from the
provider's narrow collaborators (its API client, channel pool, ledger view) and never from the
provider object itself, as E2B's sandbox holds ``files``, ``commands`` and ``pty``.

``ComputeProvider`` declares each kind of part as a :func:`part` returning ``None``; a provider
that has the ability overrides it with one returning its own implementation::

    class DockerCompute(ComputeProvider):
        @part(Capability.PAUSE)
        def pauser(self) -> DockerPauser:
            return DockerPauser(self._client, self._channels)

A part is built on first use and kept (a cached property). The provider's public method (``pause``)
checks the id, asks :func:`held` for the part (one sentence of refusal when it is ``None``), calls
it and marks the ledger. A class's ``capabilities`` gain the capability of every part it holds
(:func:`held_capabilities`, applied by ``ComputeProvider.__init_subclass__``): an ability is
declared once, by holding its part.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from praisonai._types import Capability
from praisonai.compute.abilities._refusal import unsupported

T = TypeVar("T")


class Part(functools.cached_property[T]):
    """A provider's part of one kind: a cached property that also says which capability it brings
    and whether this class holds one (``held``) or declares its absence."""

    def __init__(self, func: Callable[[Any], T], capability: Capability | None, held: bool) -> None:
        super().__init__(func)
        self.capability = capability
        self.held = held


def part(capability: Capability | None, *, held: bool = True) -> Callable[[Callable[[Any], T]], Part[T]]:
    """Declare the decorated method as the part that brings ``capability`` (``None``: an ability
    no capability names, such as the one-shot path, which callers ask the part for); ``held=False``
    on the base class's declaration, whose method returns ``None``."""

    def declare(func: Callable[[Any], T]) -> Part[T]:
        return Part(func, capability, held)

    return declare


def held_capabilities(cls: type) -> tuple[frozenset[Capability], frozenset[Capability]]:
    """The capabilities of the parts ``cls`` holds, and those of every kind of part it knows
    (held or not): the second set is what parts alone decide for this class."""
    parts = [found for name in dir(cls) if isinstance(found := _static(cls, name), Part)]
    named = [(found.capability, found.held) for found in parts if found.capability is not None]
    return frozenset(kind for kind, holds in named if holds), frozenset(kind for kind, _ in named)


def held(found: T | None, provider: str, what: str, op: str, needs: Capability) -> T:
    """``found`` when the provider holds that part; otherwise the one-sentence refusal."""
    if found is None:
        raise unsupported(provider, what, op, needs)
    return found


def _static(cls: type, name: str) -> object:
    for klass in cls.__mro__:
        if name in vars(klass):
            return vars(klass)[name]
    return None
