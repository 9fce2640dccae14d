"""What a ``LocalManagedConfig``'s ``tools`` list means: entries checked one by one, then one plan.

An entry is one of:

- **an instance tool name** (:data:`INSTANCE_TOOL_NAMES`, or PraisonAI's ``apply_diff`` /
  ``search_file`` for ``edit_file`` / ``grep``): runs in the instance, allowed without asking;
- **a Python callable**: runs in this process; the model calls it by its ``__name__``;
- **an Anthropic agent toolset** ``{"type": "agent_toolset_20260401", "default_config": {...},
  "configs": [{"name": "bash", "enabled": ..., "permission_policy": {...}}]}``: each tool it
  enables maps to ours (:data:`TOOLSET_MAP`) with its policy: ``always_allow`` -> allow,
  ``always_ask`` -> ask, and ``auto`` -> ask (a local run has no server to judge a call, so it
  asks). A tool is enabled by its own ``enabled``, else by ``default_config.enabled`` (default
  true); its policy likewise (default ``always_allow``, as on the hosted API). ``web_fetch`` and
  ``web_search`` have no local equivalent: naming one in ``configs`` while it is enabled is an
  error; enabled only by the default, it is skipped and the reason kept in ``ToolPlan.skipped``;
- **a custom tool** ``{"type": "custom", "name", "description", "input_schema"}``: the model
  calls it and ``on_custom_tool(name, input)`` answers;
- **a function reference** ``{"type": "function", "name", "ref"}``: how a record keeps a callable
  (by qualified name); one not bound again in this process is listed in ``ToolPlan.missing``.

``mcp_toolset`` entries and any other type are refused. A tool name given twice is refused.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from praisonai.llm.tools import ToolSpec, tool_name

Permission = Literal["allow", "ask", "deny"]

#: Our tools that run in the instance; ``praisonai.managed.instance._tools`` implements exactly these.
INSTANCE_TOOL_NAMES = (
    "execute_command",
    "read_file",
    "write_file",
    "edit_file",
    "list_files",
    "glob",
    "grep",
)
#: PraisonAI's names for two of them.
TOOL_ALIASES = {"apply_diff": "edit_file", "search_file": "grep"}
#: Anthropic's agent toolset names -> ours.
TOOLSET_MAP: Mapping[str, tuple[str, ...]] = {
    "bash": ("execute_command",),
    "read": ("read_file",),
    "write": ("write_file",),
    "edit": ("edit_file",),
    "glob": ("list_files", "glob"),
    "grep": ("grep",),
}
#: Toolset tools with no local equivalent.
UNSUPPORTED_TOOLSET = ("web_fetch", "web_search")
POLICIES: Mapping[str, Permission] = {"always_allow": "allow", "always_ask": "ask", "auto": "ask"}
# Both model APIs accept these; OpenAI caps names at 64 characters, Anthropic at 128.
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")
_TOOLSET_TYPE = re.compile(r"agent_toolset_\d{8}\Z")


@dataclass(frozen=True)
class CustomTool:
    """A tool the model may call that ``on_custom_tool(name, input)`` answers."""

    name: str
    description: str
    input_schema: Mapping[str, Any]  # a JSON schema of type "object"

    def spec(self) -> ToolSpec:
        """What the model is told about it."""
        return ToolSpec(self.name, self.description, self.input_schema)


@dataclass(frozen=True)
class ToolPlan:
    """The tools of one agent, resolved.

    ``instance``: our instance tool name -> permission (enabled ones only); ``functions``:
    callables run in this process; ``custom``: answered by ``on_custom_tool``;
    ``on_custom_tool``: the callback that answers them (the config's, else the constructor's;
    ``None``: a custom tool call is left pending, as on the hosted API); ``skipped``: toolset tool
    -> why it is not offered; ``missing``: recorded callables (qualified names) not bound in this
    process, so not offered.
    """

    instance: Mapping[str, Permission]
    functions: tuple[Callable[..., Any], ...] = ()
    custom: tuple[CustomTool, ...] = ()
    on_custom_tool: Callable[..., Any] | None = None
    skipped: Mapping[str, str] = field(default_factory=dict)
    missing: tuple[str, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        """Every tool name offered to the model."""
        offered = [*self.instance, *(tool_name(f) for f in self.functions), *(c.name for c in self.custom)]
        return tuple(offered)


def plan_tools(entries: Iterable[Any] | None, on_custom_tool: Callable[..., Any] | None = None) -> ToolPlan:
    """Resolve ``entries`` (``None``: every instance tool, allowed).

    Raises:
        ValueError: an entry is invalid or a name is given twice; one sentence naming
            ``tools[i]`` and what is accepted.
    """
    if entries is None:
        return ToolPlan(dict.fromkeys(INSTANCE_TOOL_NAMES, "allow"), on_custom_tool=on_custom_tool)
    builder = _Builder()
    for index, entry in enumerate(entries):
        builder.add(f"tools[{index}]", entry)
    return builder.plan(on_custom_tool)


def qualified_name(fn: Callable[..., Any]) -> str:
    """``module.qualname`` of a callable: how a record names it, the same in every process."""
    module = getattr(fn, "__module__", None) or "?"
    return f"{module}.{getattr(fn, '__qualname__', tool_name(fn))}"


def record_entry(entry: Any) -> Any:
    """``entry`` as JSON data: a callable becomes a function reference, the rest is kept."""
    if callable(entry):
        return {"type": "function", "name": tool_name(entry), "ref": qualified_name(entry)}
    return entry


def bind_entry(entry: Any, functions: Mapping[str, Callable[..., Any]]) -> Any:
    """A recorded entry with its function reference bound to the callable of that qualified
    name in ``functions``, when there is one."""
    if isinstance(entry, Mapping) and entry.get("type") == "function":
        return functions.get(str(entry.get("ref")), entry)
    return entry


class _Builder:
    """Collects one plan, refusing a name given twice."""

    def __init__(self) -> None:
        self.where: dict[str, str] = {}
        self.instance: dict[str, Permission] = {}
        self.functions: list[Callable[..., Any]] = []
        self.custom: list[CustomTool] = []
        self.skipped: dict[str, str] = {}
        self.missing: list[str] = []

    def add(self, where: str, entry: Any) -> None:
        if isinstance(entry, str):
            self._instance(where, entry)
        elif callable(entry):
            self._function(where, entry)
        elif isinstance(entry, Mapping):
            self._mapping(where, entry)
        else:
            raise ValueError(f"{where}: {type(entry).__name__} is not a tool ({_ACCEPTED})")

    def plan(self, on_custom_tool: Callable[..., Any] | None) -> ToolPlan:
        return ToolPlan(
            self.instance,
            tuple(self.functions),
            tuple(self.custom),
            on_custom_tool,
            self.skipped,
            tuple(self.missing),
        )

    def _claim(self, where: str, name: str) -> None:
        if name in self.where:
            raise ValueError(f"{where}: the tool {name!r} is already given by {self.where[name]}")
        self.where[name] = where

    def _instance(self, where: str, name: str, permission: Permission = "allow") -> None:
        ours = TOOL_ALIASES.get(name, name)
        if ours not in INSTANCE_TOOL_NAMES:
            raise ValueError(
                f"{where}: unknown tool {name!r} (instance tools: {', '.join(INSTANCE_TOOL_NAMES)}; "
                "or pass a Python callable, an agent toolset or a custom tool)"
            )
        self._claim(where, ours)
        self.instance[ours] = permission

    def _function(self, where: str, fn: Callable[..., Any]) -> None:
        name = tool_name(fn)
        if not _TOOL_NAME.match(name):
            raise ValueError(
                f"{where}: the callable's name {name!r} is not a tool name (letters, digits, _ -)"
            )
        self._claim(where, name)
        self.functions.append(fn)

    def _mapping(self, where: str, entry: Mapping[str, Any]) -> None:
        kind = entry.get("type")
        if kind == "custom":
            self._custom(where, entry)
        elif kind == "function":
            ref = _parsed(_FunctionRef, entry, where)
            self._claim(where, ref.name)
            self.missing.append(ref.ref)
        elif isinstance(kind, str) and _TOOLSET_TYPE.match(kind):
            self._toolset(where, _parsed(_Toolset, entry, where))
        elif kind == "mcp_toolset":
            raise ValueError(f"{where}: MCP toolsets are not supported by local runs")
        else:
            raise ValueError(f"{where}: unknown tool type {kind!r} ({_ACCEPTED})")

    def _custom(self, where: str, entry: Mapping[str, Any]) -> None:
        tool = _parsed(_CustomEntry, entry, where)
        _check_schema(f"{where}.input_schema", tool.input_schema)
        self._claim(where, tool.name)
        self.custom.append(CustomTool(tool.name, tool.description, tool.input_schema))

    def _toolset(self, where: str, toolset: _Toolset) -> None:
        configs: dict[str, tuple[int, _DefaultConfig]] = {}
        for index, entry in enumerate(toolset.configs):
            if entry.name in configs:
                raise ValueError(f"{where}.configs[{index}]: {entry.name!r} is configured twice")
            configs[entry.name] = (index, entry)
        default = toolset.default_config
        for name in (*TOOLSET_MAP, *UNSUPPORTED_TOOLSET):
            index, config = configs.get(name, (-1, _EMPTY_CONFIG))
            if not _first(config.enabled, default.enabled, True):
                continue
            if name in UNSUPPORTED_TOOLSET:
                if index >= 0:
                    raise ValueError(
                        f"{where}.configs[{index}]: {name} has no local equivalent; disable it "
                        f"(local toolset tools: {', '.join(TOOLSET_MAP)})"
                    )
                self.skipped[name] = "no local equivalent; enabled only by default_config"
                continue
            policy = _first(config.permission_policy, default.permission_policy, _ALLOW)
            for ours in TOOLSET_MAP[name]:
                self._instance(where, ours, POLICIES[policy.type])


def _first(*values: Any) -> Any:
    """The first value that is not ``None``."""
    return next(v for v in values if v is not None)


def _check_schema(where: str, schema: Mapping[str, Any]) -> None:
    if schema.get("type") != "object":
        raise ValueError(f'{where}: must be a JSON schema of type "object", not {schema.get("type")!r}')
    properties = schema.get("properties", {})
    if not isinstance(properties, Mapping) or not all(isinstance(p, Mapping) for p in properties.values()):
        raise ValueError(f"{where}.properties: must map each property name to its JSON schema")
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise ValueError(f"{where}.required: must be a list of property names")
    unknown = [r for r in required if r not in properties]
    if unknown:
        raise ValueError(f"{where}.required: {', '.join(map(repr, unknown))} not in properties")
    try:
        json.dumps(schema)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: must be JSON data (dicts, lists, strings, numbers, booleans)") from None


_ACCEPTED = "a tool name, a Python callable, an agent_toolset_20260401 entry or a custom tool"


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class _Policy(_Entry):
    type: Literal["always_allow", "always_ask", "auto"]


_ALLOW = _Policy(type="always_allow")


class _DefaultConfig(_Entry):
    enabled: bool | None = None
    permission_policy: _Policy | None = None


_EMPTY_CONFIG = _DefaultConfig()


class _ToolConfig(_DefaultConfig):
    # web_fetch / web_search settings are accepted (and unused: those tools cannot be enabled).
    model_config = ConfigDict(extra="allow")

    name: Literal["bash", "edit", "read", "write", "glob", "grep", "web_fetch", "web_search"]
    type: str | None = None


class _Toolset(_Entry):
    type: str
    default_config: _DefaultConfig = _DefaultConfig()
    configs: list[_ToolConfig] = Field(default_factory=list)


class _CustomEntry(_Entry):
    type: Literal["custom"]
    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    description: str
    input_schema: dict[str, Any]


class _FunctionRef(_Entry):
    type: Literal["function"]
    name: str
    ref: str


_E = TypeVar("_E", bound=_Entry)


def _parsed(model: type[_E], entry: Mapping[str, Any], where: str) -> _E:
    try:
        return model.model_validate(dict(entry))
    except ValidationError as exc:
        raise ValueError(describe(exc, where)) from None


def describe(exc: ValidationError, where: str = "", known: Iterable[str] = ()) -> str:
    """Pydantic's errors as sentences joined by "; ", each naming its location under ``where``
    (``tools[0].configs[1].name: …``). ``known``: the fields of the top level, offered for an
    unknown one."""
    return "; ".join(_problem(err, where, tuple(known)) for err in exc.errors())


def _problem(err: Any, where: str, known: tuple[str, ...]) -> str:
    path = where
    for part in err["loc"]:
        path += f"[{part}]" if isinstance(part, int) else f".{part}" if path else str(part)
    message = str(err["msg"]).removeprefix("Value error, ").replace("Input should be", "must be", 1)
    if err["type"] == "extra_forbidden":
        return f"unknown field {path!r}{_suggestion(str(err['loc'][-1]), known)}"
    if err["type"] == "missing":
        return f"{path} is required"
    if err["type"] == "string_pattern_mismatch":
        message = "must be 1 to 64 letters, digits, _ or -"
    if not path or message.startswith(path):
        return message
    shown = repr(err.get("input"))
    if _short(err.get("input")) and shown not in message:
        return f"{path}: {message}, not {shown}"
    return f"{path}: {message}"


def _suggestion(name: str, known: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    if close:
        return f" (did you mean {close[0]!r}?)"
    return f" (fields: {', '.join(known)})" if known else ""


def _short(value: Any) -> bool:
    return isinstance(value, str | int | float | bool) and len(repr(value)) <= 60
