"""The schema of ``.praisonai/environment.yaml``: one strict pydantic model.

Strict everywhere: unknown keys are errors at every level, and no value is coerced (``capture:
"false"`` is an error, not ``True``; ``memory_mb: "2g"`` is an error, not a crash later). The
*values* are checked by :class:`ComputeConfig`'s own validators, one field at a time, so the file
and the Python API accept exactly the same things and an error points at one key.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    PlainValidator,
    Tag,
    ValidationError,
    model_validator,
)

from praisonai.compute.config import ComputeConfig, network_from_praisonai
from praisonai.compute.entry_points import ALIASES
from praisonai.compute.registry import available_providers

NETWORK_RULE = "must be 'none', 'unrestricted' or {allow: [hosts]}"
#: Tags of the network union's two shapes; they appear in error locations and are dropped there.
NETWORK_TAGS = ("network:name", "network:allow")
# A host name, a *.wildcard, an IPv4/IPv6 address or CIDR block, with an optional port.
_HOST = re.compile(r"[A-Za-z0-9*\[][A-Za-z0-9.*\-:/\[\]]*\Z")


def _checked_by_config(
    field: str, wrap: Callable[[Any], Any] = lambda v: v, hint: str = "", also: dict[str, Any] | None = None
) -> AfterValidator:
    """A validator that builds a ``ComputeConfig`` with ``{field: wrap(value)}`` (and ``also``) and
    reports its error as this key's, so the file reuses the config's rules rather than copying them."""

    def check(value: Any) -> Any:
        try:
            ComputeConfig.model_validate({**(also or {}), field: wrap(value)})
        except ValidationError as exc:
            # The config's messages may name its field ("working_dir must be…"); the key says it.
            why = "; ".join(plain_message(e["msg"]).removeprefix(f"{field} ") for e in exc.errors())
            raise ValueError(f"{why} ({hint})" if hint else why) from None
        return value

    return AfterValidator(check)


def plain_message(message: str) -> str:
    """Pydantic's wording, as this module's messages word it."""
    return message.removeprefix("Value error, ").replace("Input should be", "must be", 1)


def _package(manager: str) -> AfterValidator:
    hint = "a package name, optionally with extras and a version like requests>=2; no options or spaces"
    return _checked_by_config("packages", lambda name: {manager: [name]}, hint)


def _one_or_many(value: Any) -> Any:
    """``setup: make`` is ``setup: [make]``."""
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list):
        raise ValueError("must be a command or a list of commands")
    return value


def _env_value(value: Any) -> Any:
    """Scalars become strings (the loader has already put back the file's own spelling)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if not isinstance(value, str):
        raise ValueError("must be a string, number or boolean")
    return value


def _gpu(value: Any) -> int | str:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError("must be a GPU count or a GPU type name")
    return value


def _host(value: str) -> str:
    if not _HOST.match(value):
        raise ValueError(f"{value!r} is not a host name, *.domain, IP address or CIDR block")
    return value


def _network_shape(value: Any) -> str | None:
    if isinstance(value, str):
        return NETWORK_TAGS[0]
    return NETWORK_TAGS[1] if isinstance(value, dict) else None


def _network_name(value: str) -> str:
    if value not in ("none", "unrestricted"):
        raise ValueError(NETWORK_RULE)
    return value


def _networking(value: dict[str, Any]) -> dict[str, Any]:
    network = network_from_praisonai(value)  # Claude Managed Agents' shape; its ValueError is one sentence
    for host in () if isinstance(network, str) else network.allow:
        _host(host)
    return value


def _backend(name: str) -> str:
    known = available_providers()
    if name.strip().lower() not in {*known, *ALIASES}:
        close = difflib.get_close_matches(name.strip().lower(), known, n=1)
        hint = f"did you mean {close[0]}? " if close else ""
        raise ValueError(f"unknown compute provider {name!r} ({hint}allowed: {', '.join(known)})")
    return name


class _Strict(BaseModel):
    # defer_build: the validators are built when a file is first read, not when this module is
    # imported, so a run with no environment file (or --no-environment) never pays for them.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)


class Packages(_Strict):
    """``packages:`` — names per manager, installed inside the instance at start."""

    pip: list[Annotated[str, _package("pip")]] | None = None
    apt: list[Annotated[str, _package("apt")]] | None = None
    npm: list[Annotated[str, _package("npm")]] | None = None


class Resources(_Strict):
    """``resources:`` — limits; ``disk`` is in MiB."""

    cpu: Annotated[float, _checked_by_config("cpu")] | None = None
    memory_mb: Annotated[int, _checked_by_config("memory_mb")] | None = None
    gpu: Annotated[int | str, PlainValidator(_gpu)] | None = None
    disk: Annotated[int, _checked_by_config("disk_mb")] | None = None


class NetworkAllow(_Strict):
    """``network: {allow: [hosts]}`` — reach only these hosts."""

    allow: list[Annotated[str, AfterValidator(_host)]] = Field(min_length=1)


_Network = Annotated[
    Annotated[str, AfterValidator(_network_name), Tag(NETWORK_TAGS[0])]
    | Annotated[NetworkAllow, Tag(NETWORK_TAGS[1])],
    Discriminator(_network_shape, custom_error_type="network", custom_error_message=NETWORK_RULE),
]


_Commands = Annotated[list[str], BeforeValidator(_one_or_many)]
_EnvName = Annotated[
    str, _checked_by_config("env", lambda name: {name: ""}, "letters, digits and _, not a digit first")
]
# Only the shape here: whether a host path may be mounted depends on the caller's
# allow_host_mounts, checked once the file meets the caller's arguments (environment.py).
_Mount = Annotated[
    str, _checked_by_config("mount_paths", lambda spec: [spec], also={"allow_host_mounts": True})
]


class EnvironmentDefinition(_Strict):
    """One ``.praisonai/environment.yaml``. Every key is optional; ``null`` is the same as leaving
    the key out. :meth:`config_fields` maps it onto ``ComputeConfig``."""

    image: str | None = None
    packages: Packages | None = None
    setup: _Commands | None = None
    refresh: _Commands | None = None
    env: dict[_EnvName, Annotated[str, BeforeValidator(_env_value)]] | None = None
    resources: Resources | None = None
    network: _Network | None = None
    # Claude Managed Agents' spelling of network: {type: limited, allowed_hosts: [...]}
    networking: Annotated[dict[str, Any], AfterValidator(_networking)] | None = None
    backend: Annotated[str, AfterValidator(_backend)] | None = None
    runtime: Annotated[str, _checked_by_config("runtime")] | None = None
    working_dir: Annotated[str, _checked_by_config("working_dir")] | None = None
    mount_paths: list[_Mount] | None = None
    idle_timeout: Annotated[int, _checked_by_config("idle_timeout_s")] | None = None
    ttl: Annotated[int, _checked_by_config("ttl_s")] | None = None
    idle_action: Literal["stop", "pause"] | None = None
    retain: Annotated[int, _checked_by_config("retain_s")] | None = None
    setup_timeout: Annotated[float, _checked_by_config("setup_timeout_s")] | None = None
    capture: bool | None = None

    @model_validator(mode="after")
    def _one_network(self) -> EnvironmentDefinition:
        if self.network is not None and self.networking is not None:
            raise ValueError("give network or networking, not both (they say the same thing)")
        return self

    def config_fields(self) -> dict[str, Any]:
        """The ``ComputeConfig`` keyword arguments this file sets (``backend`` is not one)."""
        fields: dict[str, Any] = {}
        for key in ("image", "setup", "refresh", "env", "working_dir", "mount_paths", "capture", "runtime"):
            if getattr(self, key) is not None:
                fields[key] = getattr(self, key)
        if self.packages is not None:
            fields["packages"] = {m: names for m, names in self.packages if names}
        if self.resources is not None:
            fields.update({_CONFIG_NAME.get(k, k): v for k, v in self.resources if v is not None})
        if isinstance(self.network, NetworkAllow):
            fields["network"] = {"allow": self.network.allow}
        elif self.network is not None:
            fields["network"] = self.network
        if self.networking is not None:
            found = network_from_praisonai(self.networking)
            fields["network"] = found if isinstance(found, str) else {"allow": found.allow}
        for key in ("idle_timeout", "ttl", "setup_timeout", "idle_action", "retain"):
            if getattr(self, key) is not None:
                fields[_CONFIG_NAME[key]] = getattr(self, key)
        return fields


#: Where each key of the file lives in ``ComputeConfig`` when the names differ.
_CONFIG_NAME = {
    "disk": "disk_mb",
    "idle_timeout": "idle_timeout_s",
    "ttl": "ttl_s",
    "idle_action": "idle_action",
    "retain": "retain_s",
    "setup_timeout": "setup_timeout_s",
}

#: The model at each mapping of the file, to list the allowed keys when one is unknown.
MODELS: dict[tuple[str, ...], type[BaseModel]] = {
    (): EnvironmentDefinition,
    ("packages",): Packages,
    ("resources",): Resources,
    ("network",): NetworkAllow,
}
