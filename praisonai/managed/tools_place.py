"""Where an agent's tools run, as ``AgentTeam``, ``AgentFlow`` and ``ManagedAgent`` take it, checked
by the same ``check_place`` that ``SharedCompute`` and ``Agent(tools_run_on=)`` apply.

A place is a provider name (``"docker"``), a provider object, or ``None``. It may be spelled two
ways in one call (``compute=`` and PraisonAI's ``tools_run_on=``; PraisonAI's older
``ManagedAgent(provider="e2b")``); both may be given when they name the same place. A name is
checked when the object is made, not at its first tool call, so a typo or a missing SDK is said
before any model is asked anything.
"""

from __future__ import annotations

from collections.abc import Mapping

from praisonai._errors import ConfigError
from praisonai.compute.registry import provider_class
from praisonai.managed.shared import check_place


def one_place(owner: str, **spellings: object) -> object:
    """The place named by whichever of ``spellings`` (keyword name -> value) is not ``None``,
    checked now; ``None`` when none is given.

    ``owner`` names the object being made (``"AgentTeam"``), for the error.

    Raises:
        UnknownProviderError, MissingDependencyError: a name no usable provider answers to (the
            one sentence ``SharedCompute`` and ``Agent(tools_run_on=)`` say).
        ConfigError: two spellings name different places.
    """
    given = [(name, value) for name, value in spellings.items() if value is not None]
    for _, value in given:
        check_place(value)
    if not given:
        return None
    (first, place), *others = given
    for name, value in others:
        if not _same(place, value):
            raise ConfigError(
                f"{owner} was given {first}={place!r} and {name}={value!r}, two spellings of where "
                f"its tools run that name different places; give only {first}=",
                op="config",
            )
    return place


def _same(a: object, b: object) -> bool:
    """Whether two places are one: the same object, equal provider options, or names of the same
    provider (an alias or another case included)."""
    if a is b:
        return True
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return dict(a) == dict(b)
    return isinstance(a, str) and isinstance(b, str) and provider_class(a) is provider_class(b)
