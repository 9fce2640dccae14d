"""Tool schemas come from hints and docstrings; calling a tool never raises."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import anyio

from praisonai.llm.tools import Tool, ToolCall, call_tool, tool_spec


def search(
    query: str, limit: int = 10, exact: bool | None = None, mode: Literal["a", "b"] = "a"
) -> list[str]:
    """Search the index.

    Longer text that is not part of the description.

    Args:
        query (str): what to look for,
            over two lines.
        limit: at most this many hits.
        exact: match the whole phrase.

    Returns:
        The hits.
    """
    return [query] * limit


def test_schema_from_hints_and_docstring() -> None:
    spec = tool_spec(search)
    assert spec.name == "search"
    assert spec.description == "Search the index."
    props = spec.parameters["properties"]
    assert spec.parameters["type"] == "object"
    assert spec.parameters["required"] == ["query"]
    assert props["query"] == {"type": "string", "description": "what to look for, over two lines."}
    assert props["limit"] == {"type": "integer", "description": "at most this many hits."}
    assert {"type": "boolean"} in props["exact"]["anyOf"]
    assert props["mode"]["enum"] == ["a", "b"]
    assert "description" not in props["mode"]


def test_schema_without_hints_or_docstring() -> None:
    def bare(x, *args, y=1, **kwargs):  # type: ignore[no-untyped-def]
        return x

    spec = tool_spec(bare)
    assert spec.description == "bare"
    assert spec.parameters["properties"] == {"x": {}, "y": {}}
    assert spec.parameters["required"] == ["x"]


def test_list_and_float_hints() -> None:
    def f(xs: list[int], ratio: float) -> None:
        """Do it."""

    props = tool_spec(f).parameters["properties"]
    assert props["xs"] == {"type": "array", "items": {"type": "integer"}}
    assert props["ratio"] == {"type": "number"}


def _call(tools: Mapping[str, Tool], name: str, args: str) -> str:
    return anyio.run(call_tool, tools, ToolCall("c1", name, args))


def test_call_results_and_errors_are_text() -> None:
    def boom() -> None:
        raise ValueError("no such thing")

    async def double(x: int) -> dict[str, int]:
        return {"x": x * 2}

    tools: dict[str, Tool] = {"boom": boom, "double": double, "search": search}
    assert _call(tools, "double", '{"x": 2}') == '{"x": 4}'
    assert _call(tools, "search", '{"query": "q", "limit": 2}') == '["q", "q"]'
    assert _call(tools, "boom", "{}") == "Error: ValueError: no such thing"
    assert _call(tools, "nope", "{}").startswith("Error: no tool named 'nope'; available: boom, double")
    assert _call(tools, "double", "{not json").startswith("Error: the arguments of double are not")
    assert _call(tools, "double", "[1]").startswith("Error: the arguments of double are not")
    assert _call(tools, "double", '{"y": 1}').startswith("Error: TypeError:")
