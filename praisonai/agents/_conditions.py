"""PraisonAI's condition templates for ``when(...)``: ``"{{score}} > 80"``, ``"{{status}} == approved"``,
``"error in {{previous_output}}"``, ``"{{status}} contains ok"``, ``"{{flag}}"``.

Evaluated by pattern, never by ``eval``: a template is text with ``{{name}}`` placeholders (a dotted
name reads into nested mappings; an unknown name reads as empty text), then read as the first of
these forms that fits:

- ``A op B`` with ``op`` one of ``> >= < <= == !=`` and two numbers: compared as numbers;
- ``A == B``, ``A != B``: the texts compared;
- ``A in B``: ``A`` occurs in ``B``; ``B contains A``: the same (both ignoring case);
- an ordering (``>``, ``<``, ...) between sides that are not both numbers: false;
- ``true``/``false`` (any case); any other text is true when it is not blank.

This is PraisonAI's ``evaluate_condition``, except that an ordering between two sides that are not
both numbers is false there only when its left side is empty, and true otherwise (``"abc > 1"``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_PLACEHOLDER = re.compile(r"\{\{([^{}]+)\}\}")
_NUMBER = r"-?\d+(?:\.\d+)?"
_NUMERIC = re.compile(rf"^({_NUMBER})\s*(>=|<=|==|!=|>|<)\s*({_NUMBER})$")
_EQUALITY = re.compile(r"^(.*?)\s*(==|!=)\s*(.*)$", re.DOTALL)
_ORDERING = re.compile(r"(?:^|\s)(?:>=|<=|>|<)(?:\s|$)")


def is_template(condition: str) -> bool:
    """Whether ``condition`` is a PraisonAI template (it holds a ``{{name}}`` placeholder)."""
    return _PLACEHOLDER.search(condition) is not None


def evaluate(condition: str, variables: Mapping[str, object]) -> bool:
    """Whether the template ``condition`` holds for ``variables`` (see the module docstring)."""
    text = _PLACEHOLDER.sub(lambda m: _text(_lookup(m.group(1).strip(), variables)), condition).strip()
    numeric = _NUMERIC.match(text)
    if numeric:
        a, op, b = float(numeric[1]), numeric[2], float(numeric[3])
        return {">": a > b, ">=": a >= b, "<": a < b, "<=": a <= b, "==": a == b, "!=": a != b}[op]
    equality = _EQUALITY.match(text)
    if equality:
        return (equality[1].strip() == equality[3].strip()) == (equality[2] == "==")
    if " in " in text:
        needle, _, haystack = text.partition(" in ")
        return needle.strip().lower() in haystack.strip().lower()
    if " contains " in text:
        haystack, _, needle = text.partition(" contains ")
        return needle.strip().lower() in haystack.strip().lower()
    if _ORDERING.search(text):  # an ordering whose sides are not both numbers
        return False
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    return bool(text)


def _lookup(name: str, variables: Mapping[str, object]) -> object:
    """``variables[name]``, reading a dotted name into nested mappings; ``None`` when absent."""
    value: object = variables
    for part in name.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def _text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):  # PraisonAI writes booleans as true/false
        return str(value).lower()
    return str(value)
