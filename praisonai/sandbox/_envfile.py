"""Reading one environment file: YAML with line numbers, and errors that point at a key.

The file is parsed once with PyYAML's safe loader: the composed node tree gives every key's line,
and the same tree is then constructed into plain data for the model. Every problem — YAML syntax,
an unknown key, a wrong type, a bad value — becomes one line ``file:line: key: message``, and all
of them are reported together.

A repository's file is untrusted input: one that resolves outside the repository (a symlinked
file or ``.praisonai`` directory) is refused before it is opened and checked again on the opened
file, and no message quotes what the file says (a value is described by its kind, a YAML error
by its rule and position), so no other file's content can be shown through one.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import os
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from praisonai._errors import ConfigError, EnvironmentFileError
from praisonai._files import read_regular_file
from praisonai.sandbox._envmodel import MODELS, NETWORK_TAGS, EnvironmentDefinition, plain_message

#: A larger file is refused unread: a definition is a few dozen lines.
MAX_BYTES = 1 << 20
_MERGE_TAG = "tag:yaml.org,2002:merge"
#: How pydantic's type errors read in a message: "must be <this>".
_TYPE_WORDS = {
    "string_type": "a string",
    "int_type": "a whole number",
    "float_type": "a number",
    "bool_type": "true or false (unquoted)",
    "list_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
}

KeyPath = tuple[str | int, ...]


@dataclasses.dataclass
class _Index:
    """What the node tree tells that the data does not: lines, and scalars as written."""

    lines: dict[KeyPath, int] = dataclasses.field(default_factory=dict)
    spelled: dict[KeyPath, str] = dataclasses.field(default_factory=dict)
    problems: list[tuple[int, str]] = dataclasses.field(default_factory=list)


def parse_file(path: Path) -> EnvironmentDefinition:
    """Read, parse and validate ``path``; see ``load_environment_file``.

    Raises:
        EnvironmentFileError: every problem found, each with the file, line and key.
    """
    shown = shown_path(path)
    _check_inside(path, shown, os.path.realpath(path))
    node, data, index = _compose(path, shown, _read(path, shown))
    if data is None:
        return EnvironmentDefinition()
    if not isinstance(data, dict):
        allowed = ", ".join(EnvironmentDefinition.model_fields)
        line = node.start_mark.line + 1
        why = f"the top level must be a mapping of keys (allowed: {allowed}), not {_describe(data)}"
        raise EnvironmentFileError(path, [f"{shown}:{line}: {why}"])
    _restore_env_spelling(data, index)
    problems = list(index.problems)
    definition = None
    try:
        definition = EnvironmentDefinition.model_validate(data)
    except ValidationError as exc:
        problems += [_problem(err, index.lines) for err in exc.errors()]
    if problems or definition is None:
        raise EnvironmentFileError(path, [f"{shown}:{line}: {text}" for line, text in sorted(problems)])
    return definition


def shown_path(path: Path) -> str:
    """``path`` as a message shows it: relative to the working directory when it is below it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return str(path)


def _read(path: Path, shown: str) -> str:
    try:
        # one open: a FIFO refused without hanging, and the file opened is the file checked
        inside = functools.partial(_check_inside_opened, path, shown)
        raw = read_regular_file(path, "environment file", limit=MAX_BYTES, on_open=inside)
    except EnvironmentFileError:
        raise
    except ConfigError as exc:  # a FIFO, device or directory, or too large: said in one sentence
        raise EnvironmentFileError(path, [str(exc)]) from None
    except FileNotFoundError:
        raise EnvironmentFileError(path, [f"{shown}: no such file"]) from None
    except OSError as exc:
        raise EnvironmentFileError(path, [f"{shown}: cannot read it: {exc.strerror or exc}"]) from None
    if len(raw) > MAX_BYTES:
        raise EnvironmentFileError(path, [f"{shown}: larger than {MAX_BYTES} bytes; is it a definition?"])
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise EnvironmentFileError(path, [f"{shown}: not UTF-8 text (byte {exc.start})"]) from None


def containment_root(path: Path) -> Path:
    """The directory ``path`` must resolve inside: its repository (the nearest directory above it,
    past a ``.praisonai`` directory, that holds ``.git``), or outside any, the directory it is in."""
    folder = Path(os.path.abspath(path)).parent
    if folder.name == ".praisonai":
        folder = folder.parent  # a symlinked .praisonai must not decide where the repository is
    for directory in (folder, *folder.parents):
        if (directory / ".git").exists():
            return directory
    return folder


def _check_inside(path: Path, shown: str, real: str | None) -> None:
    """Refuse ``path`` when it resolves (to ``real``) outside its :func:`containment_root`."""
    if real is None:
        return
    root = containment_root(path)
    if not Path(real).is_relative_to(os.path.realpath(root)):
        where = "the repository" if (root / ".git").exists() else "its directory"
        raise EnvironmentFileError(
            path,
            [
                f"{shown}: a link to a file outside {where} {root}, which is never read; "
                f"put the definition itself at {shown}"
            ],
        )


def _check_inside_opened(path: Path, shown: str, fd: int) -> None:
    _check_inside(path, shown, _opened(fd))


def _opened(fd: int) -> str | None:
    """The path of the file open as ``fd`` (``None`` where /proc cannot tell)."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None


def _compose(path: Path, shown: str, text: str) -> tuple[Any, object, _Index]:
    """The node tree, the data and the index. Indexing comes first: constructing the data
    rewrites merge keys (``<<: *base``) in the tree."""
    import yaml  # type: ignore[import-untyped]  # here: a run without a file does not pay its import

    loader = None
    try:
        loader = yaml.SafeLoader(text)
        node = loader.get_single_node()
        index = _Index()
        if node is not None:
            _walk(node, (), index, set())
        return node, (None if node is None else loader.construct_document(node)), index
    except yaml.MarkedYAMLError as exc:
        raise EnvironmentFileError(path, [_syntax_problem(shown, exc)]) from None
    except yaml.YAMLError as exc:
        raise EnvironmentFileError(path, [f"{shown}: invalid YAML: {_unquoted(str(exc))}"]) from None
    except RecursionError:
        raise EnvironmentFileError(path, [f"{shown}: invalid YAML: nested too deeply"]) from None
    finally:
        if loader is not None:
            loader.dispose()


def _syntax_problem(shown: str, exc: Any) -> str:
    mark = exc.problem_mark or exc.context_mark
    where = f"{shown}:{mark.line + 1}:{mark.column + 1}" if mark is not None else shown
    problem = exc.problem or exc.context or "syntax error"
    context = exc.context if exc.problem else None
    if context and exc.context_mark is not None and exc.context_mark.line != getattr(mark, "line", None):
        context = f"{context} on line {exc.context_mark.line + 1}"
    return _unquoted(f"{where}: invalid YAML: {problem}" + (f" ({context})" if context else ""))


#: What PyYAML quotes in its messages: a token name (kept), a character, or text from the file.
_QUOTED = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"")


def _unquoted(message: str) -> str:
    """``message`` without the file's text: PyYAML quotes aliases, tags and anchors as written;
    a token's name (``'<block end>'``) or one character (``'\\t'``) stays."""

    def shown(quoted: re.Match[str]) -> str:
        inner = quoted[0][1:-1]
        return quoted[0] if len(inner) <= 2 or re.fullmatch(r"<[a-z ]+>", inner) else "(text not shown)"

    return _QUOTED.sub(shown, message)


def _walk(node: Any, path: KeyPath, index: _Index, seen: set[int]) -> None:
    """Record the line of every key and item, scalars as written, and duplicate keys (which YAML
    forbids and PyYAML would silently resolve to the last one). An aliased node is visited once."""
    import yaml

    if id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        first: dict[str, int] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG or not isinstance(key_node, yaml.ScalarNode):
                continue
            key, line = key_node.value, key_node.start_mark.line + 1
            child = (*path, key)
            if key in first:
                index.problems.append((line, f"{dotted(child)}: duplicate key (first on line {first[key]})"))
            first.setdefault(key, line)
            index.lines[child] = line
            _walk(value_node, child, index, seen)
    elif isinstance(node, yaml.SequenceNode):
        for position, item in enumerate(node.value):
            child = (*path, position)
            index.lines[child] = item.start_mark.line + 1
            _walk(item, child, index, seen)
    elif isinstance(node, yaml.ScalarNode):
        index.spelled[path] = node.value


def _restore_env_spelling(data: dict[Any, Any], index: _Index) -> None:
    """``env`` values that YAML read as numbers or booleans become the text the file spells:
    ``PORT: 0755`` stays "0755" (not 493) and ``COUNTRY: NO`` stays "NO" (not "false")."""
    env = data.get("env")
    if not isinstance(env, dict):
        return
    for key, value in env.items():
        written = index.spelled.get(("env", key)) if isinstance(key, str) else None
        if isinstance(value, bool | int | float) and written is not None:
            env[key] = written


def _problem(err: ErrorDetails, lines: dict[KeyPath, int]) -> tuple[int, str]:
    path = _clean(err["loc"])
    return _line(path, lines), f"{dotted(path) or 'top level'}: {_message(err, path)}"


def _clean(loc: tuple[str | int, ...]) -> KeyPath:
    """Pydantic's location without its markers: dict keys' ``[key]`` and the network union's tags."""
    parts = [p for p in loc if p != "[key]"]
    if len(parts) > 1 and parts[0] == "network" and parts[1] in NETWORK_TAGS:
        del parts[1]
    return tuple(parts)


def _line(path: KeyPath, lines: dict[KeyPath, int]) -> int:
    """The line of ``path``, or of its nearest ancestor that has one (a key YAML merged in)."""
    for depth in range(len(path), 0, -1):
        if path[:depth] in lines:
            return lines[path[:depth]]
    return 1


def _message(err: ErrorDetails, path: KeyPath) -> str:
    kind = err["type"]
    if kind == "extra_forbidden":
        return _unknown_key(path)
    if kind == "invalid_key":
        return "keys must be strings"
    if kind == "missing":
        return "required"
    if kind == "too_short":
        return "must not be empty"
    if kind in _TYPE_WORDS:
        # Never echo what was written under env: values there may be secrets.
        shown = "" if path[:1] == ("env",) else f", not {_describe(err['input'])}"
        return f"must be {_TYPE_WORDS[kind]}{shown}"
    return plain_message(err["msg"])


def _unknown_key(path: KeyPath) -> str:
    model = MODELS.get(tuple(str(p) for p in path[:-1]))
    allowed = list(model.model_fields) if model is not None else []
    close = difflib.get_close_matches(str(path[-1]), allowed, n=1)
    hint = f"did you mean {close[0]}? " if close else ""
    return f"unknown key ({hint}allowed: {', '.join(allowed)})"


def _describe(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return "a string"  # never what it says: the file may not be what it claims to be
    if isinstance(value, list | dict):
        return "a list" if isinstance(value, list) else "a mapping"
    return repr(value)


def dotted(path: KeyPath) -> str:
    """``("packages", "pip", 1)`` → ``packages.pip[1]``."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text
