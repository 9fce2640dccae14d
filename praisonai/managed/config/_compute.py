"""The instance side of a ``LocalManagedConfig``: packages, network and the other fields it hands
to the compute config, each checked by ``ComputeConfig``'s own rules (never a copy of them), so a
value accepted here is one provisioning accepts."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from praisonai._errors import ConfigError
from praisonai.compute.config import ComputeConfig, NetworkAllow, network_from_praisonai, networking_data

MANAGERS = ("pip", "apt", "npm")
NETWORK_RULE = (
    "must be 'unrestricted', 'none', {'allow': [hosts]} or PraisonAI's {'type': 'unrestricted' | 'limited'}"
)
# "pip:a,b": a bare word before the first colon names a manager ("git+https://…" does not).
_PREFIX = re.compile(r"([A-Za-z]+):(.*)\Z", re.S)
# A piece starting with a version operator continues the one before ("requests>=2,<3").
_CONTINUES = ("<", ">", "=", "!", "~")


def parse_packages(value: object) -> dict[str, list[str]]:
    """Packages per manager, as ``ComputeConfig.packages`` takes them (empty lists left out).

    ``value`` is ``None`` (no packages), a dict ``{"pip": [...], "apt": [...], "npm": [...]}`` (or
    PraisonAI's ``PackagesConfig``, read through its ``to_dict()``), or
    the CLI's spelling: a string or a list of strings, each holding specs separated by spaces, a
    spec being ``manager:name,name`` or just ``name,name`` (pip, as PraisonAI's ``--packages
    a,b``). So ``["requests", "numpy"]`` is two pip packages and ``"pip:a,b npm:c apt:git"`` three
    managers. A comma inside extras or before a version operator stays in the name
    (``pip:requests[socks,http2]>=2,<3`` is one package). Duplicates are dropped, order kept.

    Raises:
        ConfigError: an unknown manager, a spec naming no package, or a name that is not a
            package specifier (whitespace, shell characters, a leading ``-``); one sentence
            naming the bad entry.
    """
    if value is None:
        return {}
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):  # PraisonAI's PackagesConfig
        value = to_dict()
    if isinstance(value, Mapping):
        found = _from_mapping(value)
    elif isinstance(value, str):
        found = _from_specs(value.split())
    elif isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        found = _from_specs(s for v in value for s in v.split())
    else:
        raise _error(
            f"must be a dict of lists per manager, a list of names or 'pip:a,b' specs, not {value!r}"
        )
    packages = {m: list(dict.fromkeys(names)) for m, names in found.items() if names}
    try:
        ComputeConfig.model_validate({"packages": packages})
    except ValidationError as exc:
        why = str(exc.errors()[0]["msg"]).removeprefix("Value error, ")
        raise _error(f"{why} (no whitespace, shell characters or leading '-')") from None
    return packages


def network_value(networking: object) -> str | dict[str, Any]:
    """``ComputeConfig.network`` for a ``networking`` value: ours (``"unrestricted"``, ``"none"``,
    ``{"allow": […]}``) or PraisonAI's (a ``{"type": …}`` dict, its ``NetworkingConfig``, or
    ``"limited"``), read by :func:`~praisonai.compute.config.network_from_praisonai`.

    Raises:
        ValueError: not a network policy this package can enforce.
    """
    data = networking_data(networking)
    try:
        if data == "limited" or (isinstance(data, Mapping) and "type" in data):
            network = network_from_praisonai(data)
        else:
            network = ComputeConfig.model_validate({"network": data}).network
    except ValidationError:
        raise ValueError(NETWORK_RULE) from None
    return network.model_dump() if isinstance(network, NetworkAllow) else network


def checked_by_compute(field: str, value: Any) -> Any:
    """``value`` if ``ComputeConfig`` accepts it for ``field``.

    Raises:
        ValueError: its reason, without the field's name (the caller's location says it).
    """
    try:
        ComputeConfig.model_validate({field: value})
    except ValidationError as exc:
        why = str(exc.errors()[0]["msg"]).removeprefix("Value error, ").removeprefix(f"{field} ")
        raise ValueError(why.replace("Input should be", "must be", 1)) from None
    return value


def _from_mapping(value: Mapping[Any, Any]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for manager, names in value.items():
        _check_manager(manager, f"the key {manager!r}")
        if not isinstance(names, list | tuple) or not all(isinstance(n, str) for n in names):
            raise _error(f"{manager} must be a list of package names, not {names!r}")
        found.setdefault(manager, []).extend(names)
    return found


def _from_specs(specs: Iterable[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for spec in specs:
        match = _PREFIX.match(spec)
        manager, names = (match.group(1), match.group(2)) if match else ("pip", spec)
        _check_manager(manager, repr(spec))
        pieces = _names(names)
        if not pieces:
            raise _error(f"{spec!r} names no package")
        found.setdefault(manager, []).extend(pieces)
    return found


def _names(text: str) -> list[str]:
    """Comma-separated names, keeping a comma inside ``[extras]`` or before a version operator."""
    names: list[str] = []
    for piece in text.split(","):
        if names and (piece.startswith(_CONTINUES) or names[-1].count("[") > names[-1].count("]")):
            names[-1] += "," + piece
        elif piece:
            names.append(piece)
    return names


def _check_manager(manager: object, shown: str) -> None:
    if manager not in MANAGERS:
        raise _error(f"{shown} names the package manager {manager!r}; use {', '.join(MANAGERS)}")


def _error(why: str) -> ConfigError:
    return ConfigError(f"packages: {why}", op="config")
