"""What ``praisonai env plan`` says each provider does with each field the environment file sets:
native, emulated or unsupported, and why. The capability table is
:mod:`praisonai.compute.capabilities`' (the one provisioning refuses by), so that the plan and
provisioning always agree."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from praisonai._errors import MissingDependencyError
from praisonai._types import Capability
from praisonai.compute.base import ComputeProvider
from praisonai.compute.capabilities import GOVERNED_FIELDS, needs_of
from praisonai.compute.config import ComputeConfig
from praisonai.compute.entry_points import ALIASES
from praisonai.compute.registry import provider_class, resolve_compute, shown_name
from praisonai.sandbox.environment import EnvironmentDefinition


@dataclass(frozen=True, slots=True)
class FieldSupport:
    field: str
    level: str  # native | emulated | unsupported | info
    why: str


@dataclass(frozen=True, slots=True)
class ProviderPlan:
    provider: str
    fields: list[FieldSupport]
    unavailable: str = ""

    @property
    def rejected(self) -> list[str]:
        """Fields provisioning refuses (``check_supported``); a capture it cannot take is not one."""
        return [s.field for s in self.fields if s.level == "unsupported" and s.field != "capture"]

    @property
    def verdict(self) -> str:
        if self.unavailable:
            return f"not installed: {self.unavailable}"
        if self.rejected:
            return f"provisioning is refused: it cannot honour {', '.join(self.rejected)}"
        return "ok"

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.provider,
            "provisions": not self.rejected and not self.unavailable,
            "verdict": self.verdict,
            "fields": [{"field": s.field, "support": s.level, "why": s.why} for s in self.fields],
        }


#: Fields every provider honours the same way: they are commands and settings inside the instance.
#: Those that need a capability come from ``praisonai.compute.capabilities`` (the table provisioning
#: refuses by), so that this plan and provisioning always agree.
_EVERYWHERE = {
    "setup": "runs inside the instance after packages",
    "env": "set for every command",
    "working_dir": "commands start there",
    "setup_timeout": "a time limit on each package install and setup or refresh command",
}


def plan_provider(name: str, definition: EnvironmentDefinition) -> ProviderPlan:
    try:
        cls = provider_class(name)
    except MissingDependencyError as exc:
        return ProviderPlan(name, [], unavailable=str(exc))
    # Class-level capabilities: what a provider built with default arguments declares.
    return _fields_plan(cls.name, cls, cls.capabilities, definition)


def plan_flavour(options: Mapping[str, Any], definition: EnvironmentDefinition) -> ProviderPlan:
    """The plan of a provider built with ``options`` (a flavour such as local under bubblewrap),
    by what that provider declares, under its shown name."""
    try:
        provider = resolve_compute(options)
    except MissingDependencyError as exc:
        return ProviderPlan(str(options["type"]), [], unavailable=str(exc))
    return _fields_plan(shown_name(provider), type(provider), provider.capabilities, definition)


def _fields_plan(
    shown: str, cls: type[ComputeProvider], caps: frozenset[Capability], definition: EnvironmentDefinition
) -> ProviderPlan:
    rows = [_support(k, v, alone, cls.name, caps) for k, v, alone in _used(definition)]
    notes = cls.plan_notes  # the provider's word where the capability table alone would mislead
    return ProviderPlan(
        shown, [FieldSupport(r.field, *notes[r.field]) if r.field in notes else r for r in rows]
    )


def _used(definition: EnvironmentDefinition) -> list[tuple[str, Any, dict[str, Any]]]:
    """The fields the file sets, in schema order, ``resources`` spelled out, each with the
    ``ComputeConfig`` fields it sets on its own (the file's own mapping, not a copy of it)."""
    used: list[tuple[str, Any, dict[str, Any]]] = []
    for key in EnvironmentDefinition.model_fields:
        value = getattr(definition, key)
        if key == "resources" and value is not None:
            for sub, v in value:
                if v is not None:
                    only = value.model_copy(update={k: v if k == sub else None for k, _ in value})
                    used.append((f"resources.{sub}", v, _alone(definition, key, only)))
        elif value is not None:
            used.append((key, value, _alone(definition, key, value)))
    return used


def _alone(definition: EnvironmentDefinition, key: str, value: Any) -> dict[str, Any]:
    """The ``ComputeConfig`` fields that ``key: value`` would set as the file's only key."""
    update = dict.fromkeys(EnvironmentDefinition.model_fields) | {key: value}
    return definition.model_copy(update=update).config_fields()


def _support(
    field: str,
    value: Any,
    alone: dict[str, Any],
    provider: str,
    caps: frozenset[Capability],
) -> FieldSupport:
    needs = needs_of(ComputeConfig.coerce(alone))
    missing = [n for n in needs if n.capability not in caps]
    if missing:
        return FieldSupport(field, "unsupported", f"no {missing[0].capability.value} capability")
    if needs:
        return FieldSupport(field, "native", needs[0].purpose)
    if GOVERNED_FIELDS & set(alone):  # e.g. network: unrestricted, which asks for nothing
        return FieldSupport(field, "native", "the default")
    if field in _EVERYWHERE:
        return FieldSupport(field, "native", _EVERYWHERE[field])
    if field in ("idle_timeout", "ttl"):
        if Capability.SELF_STOP in caps:  # a dead-man's switch inside the instance
            return FieldSupport(field, "native", "the instance stops itself, even if this process dies")
        return FieldSupport(field, "emulated", "stopped by the reaper of a running praisonai process")
    if field in ("capture", "refresh"):
        return _capture_support(field, value, caps)
    named = str(value).strip().lower()  # backend
    if ALIASES.get(named, named) == provider:
        return FieldSupport(field, "info", "chosen when no --compute is given")
    return FieldSupport(field, "info", f"the file names {value}")


def _capture_support(field: str, value: Any, caps: frozenset[Capability]) -> FieldSupport:
    captures = Capability.CAPTURE in caps
    if field == "refresh":
        why = "runs when starting from a capture" if captures else "not needed: setup runs at every start"
        return FieldSupport(field, "native", why)
    if value is False:
        return FieldSupport(field, "native", "off: setup runs at every start")
    if captures:
        return FieldSupport(field, "native", "captured after packages and setup; later starts run refresh")
    return FieldSupport(field, "unsupported", "setup runs at every start")
