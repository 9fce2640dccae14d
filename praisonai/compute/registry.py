"""The compute bridge: turn a name, options or a provider object into a provider.

Names come from the entry-point group ``praisonai.compute``; the built-ins register there exactly
like third-party packages do (see pyproject.toml). :func:`register` adds one in this process only
(tests, or a provider built at run time); it wins over an entry point of the same name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, overload

from pydantic import ValidationError

from praisonai._errors import (
    ConfigError,
    MissingDependencyError,
    ProviderUnavailableError,
    UnknownProviderError,
)
from praisonai._types import Capability
from praisonai.compute import entry_points
from praisonai.compute.base import ComputeProvider
from praisonai.compute.options import ProviderOptions, problems
from praisonai.compute.sdks import check_installed

#: The name that means "the default provider" (:func:`default_compute`).
DEFAULT = "default"
#: The embedded default, in order of preference: the first available one is used. All but the
#: last isolate; the last, plain host execution, only where the caller accepts it
#: (:func:`default_compute`).
DEFAULT_ORDER: tuple[str | Mapping[str, Any], ...] = (
    "docker",
    MappingProxyType({"type": "local", "isolate": True}),  # local under bubblewrap
    "local",
)
#: Why the default refuses, and the ways out.
NO_ISOLATION = (
    "no isolated compute is available here (neither docker nor bubblewrap can be used; `praisonai "
    "compute providers` says why): install docker or bubblewrap, or name the local provider "
    '(compute="local", --compute local) to accept running commands on this host, unisolated'
)


@dataclass(frozen=True, slots=True)
class ProviderStatus:
    """One row of ``praisonai compute providers``."""

    name: str
    installed: bool
    available: bool
    reason: str  # why not installed or not available; empty when available
    capabilities: tuple[str, ...] = ()  # what it declares (empty when not installed)


_registered: dict[str, type[ComputeProvider]] = {}


def register(name: str, cls: type[ComputeProvider]) -> None:
    """Make ``cls`` the provider named ``name`` in this process, as an entry point would (a
    later call for the same name replaces it). Child processes do not inherit it.

    Raises:
        TypeError: ``cls`` is not a ComputeProvider class.
    """
    if not (isinstance(cls, type) and issubclass(cls, ComputeProvider)):
        raise TypeError(f"register needs a ComputeProvider subclass, not {cls!r}")
    _registered[name.strip().lower()] = cls


def unregister(name: str) -> None:
    """Undo :func:`register` for ``name`` (an entry point of that name is used again); idempotent."""
    _registered.pop(name.strip().lower(), None)


def available_providers() -> list[str]:
    """Every registered provider name, sorted (installed or not)."""
    return sorted({*entry_points.all_entry_points(), *_registered})


@overload
def resolve_compute(compute: None) -> None: ...
@overload
def resolve_compute(
    compute: str | ProviderOptions | Mapping[str, Any] | ComputeProvider,
) -> ComputeProvider: ...
@overload
def resolve_compute(compute: object) -> Any: ...


def resolve_compute(compute: object) -> Any:
    """PraisonAI's bridge: ``None`` → ``None`` (no remote compute); a name or alias → a new
    provider (``"default"``: :func:`default_compute`); options (a ``ProviderOptions`` or a mapping
    with a ``type``) → the provider they describe; a provider, ours or an object written to
    PraisonAI's ``ComputeProviderProtocol``, → itself. What provisions on the result wants
    :func:`compute_provider`, which also turns ``None`` into the default and wraps such an object.

    Raises:
        UnknownProviderError (ValueError): no provider by that name; lists the available ones.
        MissingDependencyError (ImportError): the provider's SDK is missing; names the pip extra.
        ConfigError (ValueError): options that do not fit the provider, naming the bad field.
        TypeError: ``compute`` is neither a name, options nor a provider; or an object with only
            part of PraisonAI's protocol (one sentence naming what it lacks).
        ProviderUnavailableError: ``"default"`` and no isolated provider is available.
    """
    if compute is None:
        return None
    if isinstance(compute, str):
        return default_compute() if compute.strip().lower() == DEFAULT else _load(compute)()
    if isinstance(compute, (ProviderOptions, Mapping)):
        return provider_from_options(compute)
    if isinstance(compute, ComputeProvider):
        return compute
    # only for an object of PraisonAI's protocol: a named provider never loads the wrapper
    from praisonai.compute.foreign import looks_like_provider, protocol_problem

    problem = protocol_problem(compute)
    if problem is None:
        return compute  # PraisonAI's callers get their object back; compute_provider wraps it
    if looks_like_provider(compute):
        raise TypeError(problem)
    raise TypeError(
        f"compute must be a provider name or a provider object (or its options), not {type(compute).__name__}"
    )


def compute_provider(compute: object = None) -> ComputeProvider:
    """The provider to provision on: ``None`` → :func:`default_compute`; an object written to
    PraisonAI's protocol → a :class:`~praisonai.compute.foreign.ForeignProvider` around it (the
    same one for the same object); anything else as :func:`resolve_compute`.

    Raises:
        As :func:`resolve_compute`; ProviderUnavailableError also for ``None``.
    """
    resolved = default_compute() if compute is None else resolve_compute(compute)
    if isinstance(resolved, ComputeProvider):
        return resolved
    from praisonai.compute.foreign import ForeignProvider

    return ForeignProvider.around(resolved)


def default_compute(*, host: bool = False) -> ComputeProvider:
    """The first available of :data:`DEFAULT_ORDER`: docker when an engine answers and its image
    is present, else local under bubblewrap where ``bwrap`` is installed and works.

    Neither: with ``host`` (a command a person typed, ``praisonai sandbox run``) plain local, on
    this host and unisolated, which the caller must then say; without it (the library: a model's
    commands, ``Sandbox.create()``) a refusal. ``"local"`` asked for by name is never refused.

    Raises:
        ProviderUnavailableError: no isolated provider is available and ``host`` is false; one
            sentence naming the ways out.
    """
    for choice in DEFAULT_ORDER[:-1]:
        try:
            provider = resolve_compute(choice)
        except (MissingDependencyError, UnknownProviderError):
            continue
        if provider.is_available:
            return provider
    if host:
        return resolve_compute(DEFAULT_ORDER[-1])
    raise ProviderUnavailableError(NO_ISOLATION, op="provision")


def shown_name(provider: ComputeProvider) -> str:
    """The provider's name as people read it, with its flavour when the name alone does not
    say how it contains (``local (bubblewrap)``); the ledger keeps the name and the options."""
    flavour = getattr(provider, "flavour", "")
    return f"{provider.provider_name} ({flavour})" if flavour else provider.provider_name


def isolates(provider: ComputeProvider) -> bool:
    """Whether the provider's instances are kept apart from this host (it declares isolation)."""
    return Capability.ISOLATION in provider.capabilities


def provider_statuses() -> list[ProviderStatus]:
    """Installed and available state of every registered provider, with the reason when not, and
    of each flavour the default may choose (``local (bubblewrap)``), under its shown name."""
    rows = []
    choices: list[str | Mapping[str, Any]] = [*available_providers()]
    choices += [c for c in DEFAULT_ORDER if not isinstance(c, str)]
    for choice in choices:
        try:
            provider = resolve_compute(choice)
        except MissingDependencyError as exc:
            name = choice if isinstance(choice, str) else str(choice["type"])
            rows.append(ProviderStatus(name, installed=False, available=False, reason=str(exc)))
            continue
        reason = provider.unavailable_reason()
        declared = tuple(sorted(c.value for c in provider.capabilities))
        name = choice if isinstance(choice, str) else shown_name(provider)
        rows.append(ProviderStatus(name, True, reason is None, reason or "", declared))
    return sorted(rows, key=lambda row: row.name)


def provider_class(name: str) -> type[ComputeProvider]:
    """The provider class registered under ``name`` (or an alias), not yet constructed, so that
    a caller can pass arguments: ``provider_class(entry.provider)(**entry.spec)``.

    Raises:
        UnknownProviderError (ValueError): no provider by that name; lists the available ones.
        MissingDependencyError (ImportError): the provider's SDK is missing; names the pip extra.
    """
    return _load(name)


def provider_for_record(provider: str, spec: Mapping[str, Any]) -> ComputeProvider:
    """The provider that made a ledger row, rebuilt in this process from the row's ``provider``
    name and ``spec`` (its ``options.to_record()``): the one place a recorded instance's provider
    is rebuilt. A row written before options had a ``type`` gets the provider's name.

    Raises:
        UnknownProviderError, MissingDependencyError: as :func:`provider_class`.
        ConfigError: the spec no longer fits the provider's options (one sentence).
    """
    cls = _load(provider)
    try:
        options = cls.options_model.model_validate({"type": cls.name, **spec})
    except ValidationError as exc:
        message = f"the recorded {cls.name} options no longer fit: {problems(exc)}"
        raise ConfigError(message, op="config") from None
    return cls.from_options(options)


def provider_from_options(options: ProviderOptions | Mapping[str, Any]) -> ComputeProvider:
    """The provider ``options`` describe: the registered provider named by their ``type``. A
    mapping (what a user wrote: ``{"type": "docker", "image": "python:3.12"}``) is validated
    against that provider's options model first.

    Raises:
        UnknownProviderError, MissingDependencyError: as :func:`provider_class`.
        ConfigError: no ``type``, or a field of the wrong type or unknown (one sentence naming
            the provider and the field), or options of another provider's model.
    """
    if isinstance(options, ProviderOptions):
        return _load(options.type).from_options(options)
    name = options.get("type")
    if not isinstance(name, str):
        raise ConfigError("provider options need a 'type' naming the provider, e.g. {'type': 'docker'}")
    cls = _load(name)
    return cls.from_options(cls.options_model.parse({**options, "type": cls.name}))  # an alias → the name


def _load(name: str) -> type[ComputeProvider]:
    key = entry_points.canonical(name)
    cls = _registered.get(key)
    if cls is None:
        entry = entry_points.entry_point(key)
        if entry is None:
            known = ", ".join(available_providers()) or "none (is praisonai installed? pip install -e .)"
            raise UnknownProviderError(f"unknown compute provider {name!r}; available: {known}")
        try:
            cls = entry.load()
        except (ImportError, AttributeError) as exc:  # a provider package absent or broken: say which
            raise MissingDependencyError(
                f"the {key} provider ({entry.value}) cannot be loaded: {exc}; is its package installed?"
            ) from exc
    check_installed(cls, key)
    return cls
