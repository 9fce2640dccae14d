"""Python callables as model tools: a JSON schema from type hints and docstrings, and a safe call.

A tool's name is its ``__name__``; its description is the docstring's first paragraph; each
parameter's description comes from a Google-style ``Args:`` section; required parameters are those
without a default. Calling a tool never raises: every failure comes back as ``"Error: ..."`` text,
which the loop hands to the model so it can correct itself.
"""

from __future__ import annotations

import inspect
import json
import re
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio.to_thread

Tool = Callable[..., Any]

_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters|Returns|Return|Raises|Yields|Examples?|Notes?):\s*$")
_ARG = re.compile(r"^\s*(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


@dataclass(frozen=True)
class ToolSpec:
    """What the model is told about one tool."""

    name: str
    description: str
    parameters: Mapping[str, Any]  # a JSON schema of type "object"


@dataclass(frozen=True)
class ToolCall:
    """One call the model asked for; ``arguments`` is the raw JSON text or an already-parsed dict."""

    id: str
    name: str
    arguments: str | Mapping[str, Any] = field(default="{}")


def tool_name(tool: Tool) -> str:
    """The name the model calls ``tool`` by: its ``__name__``."""
    return str(getattr(tool, "__name__", type(tool).__name__))


def tool_spec(tool: Tool) -> ToolSpec:
    """Describe ``tool`` from its signature, type hints and docstring."""
    doc = inspect.getdoc(tool) or ""
    summary, arg_docs = _parse_doc(doc)
    try:
        hints = typing.get_type_hints(tool)
    except Exception:  # unresolvable annotations: describe the parameters without types
        hints = {}
    properties: dict[str, Any] = {}
    required: list[str] = []
    for param in inspect.signature(tool).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD) or param.name in ("self", "cls"):
            continue
        schema = _type_schema(hints.get(param.name, inspect.Parameter.empty))
        if param.name in arg_docs:
            schema["description"] = arg_docs[param.name]
        properties[param.name] = schema
        if param.default is inspect.Parameter.empty:
            required.append(param.name)
    parameters = {"type": "object", "properties": properties, "required": required}
    return ToolSpec(name=tool_name(tool), description=summary or tool_name(tool), parameters=parameters)


def _type_schema(hint: Any) -> dict[str, Any]:
    if hint is inspect.Parameter.empty or hint is Any:
        return {}
    from pydantic import TypeAdapter  # pydantic is a core dependency; imported late to keep import light

    try:
        return dict(TypeAdapter(hint).json_schema())
    except Exception:  # a type pydantic cannot describe: accept anything
        return {}


def _parse_doc(doc: str) -> tuple[str, dict[str, str]]:
    """Return (first paragraph, {parameter: description}) of a Google-style docstring.

    In the ``Args:`` section a line at the section's indentation starts a parameter
    (``name: text`` or ``name (type): text``); deeper lines continue its description.
    """
    summary = doc.split("\n\n", 1)[0].strip()
    if _SECTION.match(summary.splitlines()[0] if summary else ""):
        summary = ""
    args: dict[str, str] = {}
    section, indent, current = "", -1, ""
    for line in doc.splitlines():
        header = _SECTION.match(line)
        if header:
            section, indent, current = header.group(1), -1, ""
            continue
        if section not in ("Args", "Arguments", "Parameters") or not line.strip():
            continue
        depth = len(line) - len(line.lstrip())
        indent = depth if indent < 0 else indent
        match = _ARG.match(line)
        if match and depth <= indent:
            current = match.group(1).lstrip("*")
            args[current] = match.group(2).strip()
        elif current:
            args[current] = f"{args[current]} {line.strip()}".strip()
    return " ".join(summary.split()), args


async def call_tool(tools: Mapping[str, Tool], call: ToolCall) -> str:
    """Run the tool ``call`` names and return its result as text; never raises (but on cancellation).

    Async tools are awaited; sync tools run in a worker thread (they may block on I/O). A result
    that is not a string is JSON-encoded when possible, else ``str()``-ed.
    """
    tool = tools.get(call.name)
    if tool is None:
        return f"Error: no tool named {call.name!r}; available: {', '.join(sorted(tools)) or 'none'}"
    try:
        args = _arguments(call.arguments)
    except ValueError as exc:
        return f"Error: the arguments of {call.name} are not a JSON object: {exc}"
    try:
        if inspect.iscoroutinefunction(tool):
            result = await tool(**args)
        else:
            result = await anyio.to_thread.run_sync(lambda: tool(**args))
            if inspect.isawaitable(result):
                result = await result
    except Exception as exc:
        return f"Error: {type(exc).__name__}: {exc}"
    return _as_text(result)


def _arguments(raw: str | Mapping[str, Any]) -> dict[str, Any]:
    value = json.loads(raw or "{}") if isinstance(raw, str) else raw
    if not isinstance(value, Mapping):
        raise ValueError(f"got {type(value).__name__}")
    return dict(value)


def _as_text(result: Any) -> str:
    if isinstance(result, str):
        return result
    try:
        return json.dumps(result, default=str)
    except (TypeError, ValueError):
        return str(result)
