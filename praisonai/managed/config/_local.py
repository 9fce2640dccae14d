"""``LocalManagedConfig``: what a user writes to define a managed agent whose loop runs here.

::

    config = LocalManagedConfig(model="gpt-4o-mini", system="You are a coder.",
                                packages={"pip": ["requests"]}, budget=200_000)
    plan = resolve_tools(config)          # which tools, where they run, which ask first
    record = config_record(config)        # what the store keeps; config_hash(record) names it

Field names are PraisonAI's (``LocalAgentConfig`` and ``SandboxedAgentConfig`` are the same
class); ``instructions`` is accepted for ``system`` and ``budget`` for ``budget_tokens``. Unknown
fields and bad values are refused when the config is made, with one :class:`ConfigError`
sentence naming the field and why. Callbacks given here win over the ``ManagedAgent``
constructor's, as in PraisonAI (:meth:`LocalManagedConfig.callbacks`).

Where things run: the tools in ``tools`` that are instance tools run in the compute instance;
callables and custom tools run in this process. Packages are installed in the instance by the
one provisioning path (:func:`compute_fields` are explicit fields over ``environment.yaml``);
with no compute named they would land on this machine, which :func:`check_host_packages`
refuses unless ``host_packages_ok=True``. Even then they go to the local provider like any
config, and it refuses packages it cannot install inside an instance: nothing is ever
``pip install``-ed into this interpreter.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from praisonai._errors import ConfigError
from praisonai._limits import MAX_BUDGET_TOKENS, MAX_TURN_REQUESTS
from praisonai.compute.config import PackageManager, networking_data
from praisonai.compute.dataclass_fields import changed_fields
from praisonai.compute.workspace import Resource
from praisonai.managed.config._compute import checked_by_compute, network_value, parse_packages
from praisonai.managed.config._tools import (
    INSTANCE_TOOL_NAMES,
    CustomTool,
    Permission,
    ToolPlan,
    bind_entry,
    describe,
    plan_tools,
    qualified_name,
    record_entry,
)
from praisonai.managed.text import line_problem, utf8_problem

__all__ = [
    "DEFAULT_SYSTEM",
    "INSTANCE_TOOL_NAMES",
    "RECORD_SCHEMA",
    "CustomTool",
    "LocalAgentConfig",
    "LocalManagedConfig",
    "Permission",
    "SandboxedAgentConfig",
    "ToolPlan",
    "check_host_packages",
    "compute_fields",
    "config_hash",
    "config_record",
    "parse_packages",
    "resolve_tools",
]

DEFAULT_SYSTEM = "You are a helpful coding assistant."
#: The version of :func:`config_record`'s shape.
RECORD_SCHEMA = 1
# Set on the ManagedAgent or in the store's session row, not part of the agent's definition.
_NOT_RECORDED = {"session_title", "on_tool_confirmation", "on_custom_tool"}
_ALIASES = {"instructions": "system", "budget": "budget_tokens"}


class LocalManagedConfig(BaseModel):
    """A managed agent run by the local loop. Immutable; :meth:`replace` makes a changed copy."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field("agent", min_length=1)
    """The agent's name; with the config's hash it identifies the agent in the store."""
    model: str = Field("gpt-4o-mini", min_length=1)
    """The model, as ``praisonai.llm`` reads it (``gpt-4o-mini``, ``anthropic/claude-…``)."""
    system: str = Field(DEFAULT_SYSTEM, validation_alias=AliasChoices("system", "instructions"))
    """The system prompt (``instructions`` is accepted too)."""
    tools: tuple[Any, ...] | None = None
    """``None``: every instance tool, allowed without asking. Else a list of instance tool names,
    Python callables, agent toolset entries and custom tools (see ``config._tools``)."""
    max_turns: int = Field(25, ge=1, le=MAX_TURN_REQUESTS, strict=True)
    """At most this many model requests in one turn (one prompt); then the turn stops."""
    budget_tokens: int | None = Field(
        None,
        ge=1,
        le=MAX_BUDGET_TOKENS,
        strict=True,
        validation_alias=AliasChoices("budget_tokens", "budget"),
    )
    """A hard cap on the session's cumulative tokens (input + output); ``None``: no cap."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Free-form JSON data kept with the agent."""
    working_dir: str | None = None
    """Where commands start in the instance; ``None`` (or PraisonAI's ``""``): the environment
    file's, else ``/workspace``. The effective one is the provision plan's ``working_dir``."""
    resources: tuple[Resource, ...] = ()
    """Put in the instance when it is made, named as Claude Managed Agents names them: a
    ``github_repository`` cloned, a ``local_directory`` upload (see ``praisonai.compute.workspace``)."""
    env: dict[str, str] = Field(default_factory=dict)
    """Environment variables of every command in the instance (values never recorded)."""
    packages: dict[PackageManager, list[str]] | None = None
    """Installed in the instance: a dict per manager, a list (pip) or ``"pip:a,b npm:c"``."""
    networking: str | dict[str, Any] | None = None
    """The instance's network: ``"none"``, ``{"allow": [hosts]}``, PraisonAI's ``{"type":
    "limited", "allowed_hosts": [hosts]}`` (an allowlist; no hosts: no network) or its
    ``NetworkingConfig``, or ``None``: the environment file's, else unrestricted."""
    host_packages_ok: bool = Field(False, strict=True)
    """Allow packages when no compute is named (see :func:`check_host_packages`)."""
    session_title: str | None = None
    """The title of sessions this config starts (not part of the record)."""
    environment: str | bool | None = None
    """Which ``environment.yaml``: ``None``/``True`` the one found from the working directory, a
    path that file (made absolute here), ``False`` none."""
    idle_timeout_s: int | None = Field(None, strict=True)
    """Seconds an idle instance lives (``None``: the file's, else the compute default)."""
    ttl_s: int | None = Field(None, strict=True)
    """Seconds an instance lives however busy (``None``: the file's, else no limit)."""
    checkpoints: bool = Field(False, strict=True)
    """Snapshot the instance at the end of each turn (docker, local), so that ``fork_session``
    forks at any turn, not only the last; each is kept until its session is deleted."""
    on_tool_confirmation: Callable[..., Any] | None = Field(None, exclude=True)
    """Asked before a tool whose permission is "ask"; wins over the ManagedAgent's."""
    on_custom_tool: Callable[..., Any] | None = Field(None, exclude=True)
    """Answers custom tool calls; wins over the ManagedAgent's."""

    def __init__(self, **data: Any) -> None:
        """Raises ConfigError (never pydantic's ValidationError) for a bad or unknown field."""
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise _config_error(exc, type(self)) from None

    @classmethod
    def coerce(cls, value: object = None) -> LocalManagedConfig:
        """``None`` (the defaults), a config of this class (or the fields set on another
        ``LocalManagedConfig``), a dict of fields, or a dataclass
        config (PraisonAI's): its fields are read with ``dataclasses.asdict`` and those equal to
        its declared defaults are left out, so its defaults mean ours.

        Raises:
            ConfigError: anything else, or an invalid or unknown field.
        """
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if isinstance(value, LocalManagedConfig):  # the local config given to the hosted backend
            data = {name: getattr(value, name) for name in value.model_fields_set}
        elif isinstance(value, Mapping):
            data = dict(value)
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            data = changed_fields(value)
        else:
            raise ConfigError(
                f"config must be a {cls.__name__}, a dict or a dataclass, not {type(value).__name__}",
                op="config",
            )
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise _config_error(exc, cls) from None

    @classmethod
    def from_record(
        cls,
        record: Mapping[str, Any],
        *,
        functions: Iterable[Callable[..., Any]] = (),
        env: Mapping[str, str] | None = None,
    ) -> LocalManagedConfig:
        """The config :func:`config_record` recorded, rebuilt in any process.

        What a record cannot hold is given back here: ``functions`` are bound to the recorded
        callables of the same qualified name (``module.qualname``); a recorded callable left
        unbound stays a reference, listed in ``resolve_tools(config).missing`` and not offered
        to the model. ``env`` gives values for the recorded variable names; names without a value
        are left out. Callbacks are not recorded: pass them to the ManagedAgent.

        Raises:
            ConfigError: not a record of this schema, or an invalid one.
        """
        if not isinstance(record, Mapping) or record.get("schema") != RECORD_SCHEMA:
            raise ConfigError(f"not a {cls.__name__} record of schema {RECORD_SCHEMA}", op="config")
        data = {k: v for k, v in record.items() if k != "schema"}
        bound = {qualified_name(fn): fn for fn in functions}
        if isinstance(data.get("tools"), list):
            data["tools"] = [bind_entry(entry, bound) for entry in data["tools"]]
        names = data.get("env", [])
        if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
            raise ConfigError(
                f"the record's env must be a list of variable names, not {names!r}", op="config"
            )
        values = env or {}
        data["env"] = {name: values[name] for name in names if name in values}
        return cls.coerce(data)

    def replace(self, **changes: Any) -> LocalManagedConfig:
        """A copy with ``changes`` applied and validated (the fields set here are kept)."""
        given = {name: getattr(self, name) for name in self.model_fields_set}
        named = {_ALIASES.get(key, key): value for key, value in changes.items()}
        return type(self).coerce({**given, **named})

    def callbacks(
        self,
        on_tool_confirmation: Callable[..., Any] | None = None,
        on_custom_tool: Callable[..., Any] | None = None,
    ) -> tuple[Callable[..., Any] | None, Callable[..., Any] | None]:
        """The callbacks in effect: this config's, else the given ones (the constructor's).
        PraisonAI's rule, kept so that a config carrying its callbacks behaves the same anywhere."""
        return (self.on_tool_confirmation or on_tool_confirmation, self.on_custom_tool or on_custom_tool)

    @model_validator(mode="before")
    @classmethod
    def _one_spelling(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            for alias, field in _ALIASES.items():
                if field in data and alias in data:
                    raise ValueError(f"give {field} or {alias}, not both")
        return data

    @field_validator("tools", mode="before")
    @classmethod
    def _tools_list(cls, tools: Any) -> Any:
        if tools is not None and not isinstance(tools, list | tuple):
            raise ValueError(f"tools must be a list, not {type(tools).__name__}")
        return tools

    @field_validator("tools")
    @classmethod
    def _tools_resolve(cls, tools: tuple[Any, ...] | None) -> tuple[Any, ...] | None:
        plan_tools(tools)  # raises ValueError naming tools[i]
        return tools

    @field_validator("packages", mode="before")
    @classmethod
    def _packages(cls, value: Any) -> dict[str, list[str]] | None:
        return parse_packages(value) or None

    @field_validator("env", "idle_timeout_s", "ttl_s")
    @classmethod
    def _by_compute(cls, value: Any, info: Any) -> Any:
        return value if value is None else checked_by_compute(info.field_name, value)

    @field_validator("working_dir", mode="before")
    @classmethod
    def _working_dir(cls, value: Any) -> Any:
        return None if value in (None, "") else checked_by_compute("working_dir", value)

    @field_validator("networking", mode="before")
    @classmethod
    def _networking_data(cls, value: Any) -> Any:
        """PraisonAI's ``NetworkingConfig`` as the dict PraisonAI sends (hosted and local alike)."""
        return networking_data(value)

    @field_validator("networking")
    @classmethod
    def _networking(cls, value: str | dict[str, Any] | None) -> str | dict[str, Any] | None:
        if value is not None:
            network_value(value)
        return value

    @field_validator("environment", mode="before")
    @classmethod
    def _environment(cls, value: Any) -> Any:
        if isinstance(value, os.PathLike) or (isinstance(value, str) and value):
            return os.path.abspath(os.fspath(value))
        if value == "":
            raise ValueError("environment must be a path, True, False or None, not ''")
        return value

    @field_validator("model", "system")
    @classmethod
    def _utf8(cls, value: str) -> str:
        why = utf8_problem(value)
        if why is not None:
            raise ValueError(why)
        return value

    @field_validator("name", "session_title")
    @classmethod
    def _one_line(cls, value: str | None) -> str | None:
        why = None if value is None else line_problem(value)
        if why is not None:
            raise ValueError(f"{why}; use plain text on one line")
        return value

    @field_validator("metadata")
    @classmethod
    def _json_metadata(cls, value: dict[str, Any]) -> dict[str, Any]:
        _check_json(value)
        return value


LocalAgentConfig = SandboxedAgentConfig = LocalManagedConfig


def resolve_tools(config: object, custom_callback: Callable[..., Any] | None = None) -> ToolPlan:
    """The tools of ``config`` (a ``LocalManagedConfig``, a dict or ``None``), resolved: which
    run in the instance and with which permission, which run here, which are custom.
    ``custom_callback`` is the ManagedAgent's ``on_custom_tool``; the config's wins.

    Raises:
        ConfigError: ``config`` is invalid.
    """
    cfg = LocalManagedConfig.coerce(config)
    return plan_tools(cfg.tools, cfg.callbacks(on_custom_tool=custom_callback)[1])


def compute_fields(config: LocalManagedConfig) -> dict[str, Any]:
    """The fields ``config`` sets for the instance, as ``ComputeConfig`` keyword arguments:
    ``packages``, ``env``, ``working_dir``, ``network``, ``idle_timeout_s``, ``ttl_s`` — only
    those given, so that the environment file's values stand where the config is silent (they
    are explicit fields of ``praisonai.sandbox.provisioning.plan``)."""
    fields: dict[str, Any] = {
        "packages": {m: list(names) for m, names in (config.packages or {}).items()},
        "env": dict(config.env),
        "working_dir": config.working_dir,
        "network": None if config.networking is None else network_value(config.networking),
        "idle_timeout_s": config.idle_timeout_s,
        "ttl_s": config.ttl_s,
    }
    return {k: v for k, v in fields.items() if v is not None and v != {}}


def check_host_packages(config: LocalManagedConfig, compute_named: bool) -> None:
    """Refuse packages that would be installed on this machine.

    ``compute_named``: whether a compute was chosen (the ManagedAgent's ``compute``, or the
    environment file's ``backend``); without one the instance would be this machine.

    Raises:
        ConfigError: ``config`` has packages, no compute is named and ``host_packages_ok`` is
            false.
    """
    if config.packages and not compute_named and not config.host_packages_ok:
        listed = " ".join(f"{m}:{','.join(names)}" for m, names in config.packages.items())
        raise ConfigError(
            f"packages ({listed}) would be installed on this machine; name a compute "
            "(docker, ssh, …) or set host_packages_ok=True",
            op="config",
        )


def config_record(config: LocalManagedConfig) -> dict[str, Any]:
    """The agent's definition as canonical JSON data: what the store keeps and hashes.

    Every field but the callbacks and ``session_title`` (a session's, not the agent's); callables
    in ``tools`` become ``{"type": "function", "name", "ref": "module.qualname"}``; ``env`` keeps
    the variable *names* only (values may be secrets). :meth:`LocalManagedConfig.from_record`
    rebuilds the config from it.
    """
    data = config.model_dump(exclude=_NOT_RECORDED)
    data["tools"] = None if config.tools is None else [record_entry(entry) for entry in config.tools]
    data["env"] = sorted(config.env)
    record = {"schema": RECORD_SCHEMA, **data}
    canonical: dict[str, Any] = json.loads(_canonical_json(record))
    return canonical


def config_hash(record: Mapping[str, Any]) -> str:
    """The sha256 (hex) of ``record``'s canonical JSON: equal records, equal hashes, in any process."""
    return hashlib.sha256(_canonical_json(record).encode()).hexdigest()


def _canonical_json(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _check_json(value: Any) -> None:
    try:
        _canonical_json(value)
    except (TypeError, ValueError):
        raise ValueError("must be JSON data (dicts, lists, strings, numbers, booleans, None)") from None


def _config_error(exc: ValidationError, cls: type[LocalManagedConfig]) -> ConfigError:
    known = sorted({*cls.model_fields, "instructions", "budget"})
    return ConfigError(f"invalid {cls.__name__}: {describe(exc, known=known)}", op="config")
