"""Provider options as data: what a provider is built with, stored in the ledger, rebuilt anywhere.

Each provider declares one frozen pydantic model (``options_model``), a subclass of
:class:`ProviderOptions` with a ``type`` literal naming the provider and ``extra="forbid"``.
``provider.options`` is that model for a built provider and ``Provider.from_options(options)``
builds one back, so another process (``ps``, ``stop``, ``gc``, the reaper, a resumed session)
reaches the same instances from a ledger row (``registry.provider_for_record``).

Secrets are ``SecretStr`` fields (at any depth). :meth:`ProviderOptions.to_record`, what the
ledger stores, leaves them out; a rebuilt provider gets ``None`` there and looks for the secret
where the first process found it (its environment or config), so a provider must treat a missing
secret that way. The same models are the shape cloud providers' credentials and endpoints take.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, SecretStr, ValidationError
from pydantic_core import to_jsonable_python

from praisonai._errors import ConfigError
from praisonai._limits import check_number

_O = TypeVar("_O", bound="ProviderOptions")


class ProviderOptions(BaseModel):
    """The options of a provider with no settings; the base of every provider's model.

    A subclass narrows ``type`` to ``Literal["<provider name>"]`` with that default and adds
    fields; every field has a default, so ``Model()`` is the provider built without arguments.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: str
    """The provider's registered name (``ComputeProvider.name``)."""

    @classmethod
    def parse(cls: builtins.type[_O], data: Mapping[str, Any]) -> _O:
        """``data`` validated into this model.

        Raises:
            ConfigError: a field is of the wrong type or unknown; one sentence naming the
                provider and every bad field.
        """
        try:
            return cls.model_validate(dict(data))
        except ValidationError as exc:
            message = f"invalid {cls.provider_name()} provider options: {problems(exc)}"
            raise ConfigError(message, op="config") from None

    @classmethod
    def provider_name(cls) -> str:
        """The provider these options are for (the ``type`` default; ``"provider"`` when none)."""
        default = cls.model_fields["type"].default
        return default if isinstance(default, str) else "provider"

    def settings(self) -> dict[str, Any]:
        """Every field but ``type``, by name, values as they are (not dumped): the keyword
        arguments of a provider whose constructor takes its fields."""
        return {name: getattr(self, name) for name in type(self).model_fields if name != "type"}

    def to_record(self) -> dict[str, Any]:
        """What the ledger stores: JSON-able, ``type`` plus the fields that differ from their
        defaults, and never a secret (every ``SecretStr`` is left out, at any depth)."""
        dumped = self.model_dump(mode="python", exclude_defaults=True, exclude={"type"})
        return {"type": self.type, **to_jsonable_python(_without_secrets(dumped))}


def problems(exc: ValidationError) -> str:
    """A pydantic error as one line: ``field.sub: message; other: message`` (a message that
    already starts with its field's name, as :func:`bounded`'s do, is not prefixed again)."""
    said = []
    for e in exc.errors():
        where, message = ".".join(map(str, e["loc"])), e["msg"].removeprefix("Value error, ")
        named = bool(e["loc"]) and message.startswith(f"{e['loc'][-1]} ")
        said.append(f"{where}: {message}" if where and not named else message)
    return "; ".join(said)


def bounded(name: str) -> BeforeValidator:
    """A field validator keeping the option within ``_limits.BOUNDS[name]``: a finite number in
    its range (not a bool, not a string), or one sentence naming the option and the range."""

    def check(value: object) -> object:
        if value is None:  # an optional field's "unset"; the field's type decides if allowed
            return value
        try:
            check_number(value, name)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        return value

    return BeforeValidator(check)


def _without_secrets(value: Any) -> Any:
    """``value`` (a python-mode dump) with every ``SecretStr`` removed: a dict drops the key, a
    list the item."""
    if isinstance(value, dict):
        return {k: _without_secrets(v) for k, v in value.items() if not isinstance(v, SecretStr)}
    if isinstance(value, (list, tuple)):
        return [_without_secrets(v) for v in value if not isinstance(v, SecretStr)]
    return value
