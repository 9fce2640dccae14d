"""The package's shape, read from its source (no import of it): small modules, no import cycles,
no private names borrowed across packages. The layering itself is import-linter's job (see
``[tool.importlinter]`` in pyproject.toml, run by ``.ci/run``).

"Package" below means a top-level package of praisonai (``cli``, ``agents``, ``managed``, ``llm``,
``sandbox``, ``compute``, ``runtime``); the core modules (``praisonai/_errors.py`` and the other
top-level ``_*.py`` files) form one package of their own, ``core``, that every package may use.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "praisonai"
MAX_LINES = 400


@dataclass(frozen=True)
class Import:
    """One imported module (and the names taken from it) at ``where`` in ``importer``."""

    importer: str
    module: str
    names: tuple[str, ...]
    line: int
    type_checking: bool  # under `if TYPE_CHECKING:`

    @property
    def where(self) -> str:
        return f"{_path_of(self.importer)}:{self.line}"


# ---- (a) module size ----------------------------------------------------------------------------


def test_no_module_is_longer_than_the_limit() -> None:
    too_long = sorted(
        (len(path.read_text().splitlines()), path.relative_to(ROOT).as_posix())
        for path in PACKAGE.rglob("*.py")
        if len(path.read_text().splitlines()) > MAX_LINES
    )
    listed = "".join(f"\n  {path}: {lines} lines" for lines, path in reversed(too_long))
    assert not too_long, f"{len(too_long)} module(s) over {MAX_LINES} lines (split them by role):{listed}"


# ---- (b) import cycles --------------------------------------------------------------------------


def test_there_are_no_import_cycles() -> None:
    """Every import statement counts, at module level or inside a function (a lazy import is a
    dependency all the same), except those under ``if TYPE_CHECKING:``."""
    graph: dict[str, dict[str, Import]] = {name: {} for name in _modules()}
    for found in _imports():
        if not found.type_checking and found.module != found.importer:
            graph[found.importer].setdefault(found.module, found)
    tangles = _tangles(graph)
    assert not tangles, f"{len(tangles)} import cycle(s):\n" + "\n".join(_describe(graph, t) for t in tangles)


def _describe(graph: dict[str, dict[str, Import]], tangle: list[str]) -> str:
    """The modules caught in one cycle, and one loop through them with its import statements."""
    loop = _a_cycle(graph, tangle)
    text = "  " + " -> ".join([*(edge.importer for edge in loop), loop[0].importer]) + "\n"
    text += "".join(f"      {edge.where}: imports {edge.module}\n" for edge in loop)
    if len(tangle) > len(loop):
        text += f"    ({len(tangle)} modules are tangled with it: {', '.join(tangle)})\n"
    return text


def _tangles(graph: dict[str, dict[str, Import]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return sorted(found)


def _a_cycle(graph: dict[str, dict[str, Import]], component: list[str]) -> list[Import]:
    """The shortest loop from the component's first module back to it, as its import edges."""
    members, start = set(component), component[0]
    paths: dict[str, list[Import]] = {start: []}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for nxt, edge in sorted(graph[node].items()):
            if nxt == start:
                return [*paths[node], edge]
            if nxt in members and nxt not in paths:
                paths[nxt] = [*paths[node], edge]
                queue.append(nxt)
    raise AssertionError(f"no loop through {start}")  # a strongly connected component has one


# ---- (c) private names across packages ----------------------------------------------------------


def test_no_private_name_is_imported_from_another_package() -> None:
    """A ``_name`` (a module or a name in it) is its package's own business: another package may
    not import it. The core modules themselves (``praisonai._errors``…) are public to the whole
    package; ``praisonai/__init__.py`` re-exports for users and is exempt. Imports under
    ``if TYPE_CHECKING:`` count: an annotation couples as much as a call."""
    offenders = []
    for found in _imports():
        mine, theirs = _package_of(found.importer), _package_of(found.module)
        if found.importer == "praisonai" or mine == theirs:
            continue
        path = found.module.split(".")[2 if theirs == "core" else 1 :]  # a core module is public
        private = [part for part in path if _private(part)] + [name for name in found.names if _private(name)]
        if private:
            offenders.append(f"  {found.where}: {mine} takes {', '.join(private)} from {found.module}")
    listed = "\n".join(offenders)
    assert not offenders, f"{len(offenders)} private name(s) imported across packages:\n{listed}"


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _package_of(module: str) -> str:
    """``compute`` for praisonai.compute.x, ``core`` for praisonai._errors, ``praisonai`` for the root."""
    parts = module.split(".")
    if len(parts) == 1:
        return "praisonai"
    if (PACKAGE / f"{parts[1]}.py").is_file() and parts[1] != "__main__":
        return "core"
    return parts[1]


# ---- reading the source -------------------------------------------------------------------------


@functools.cache
def _modules() -> dict[str, Path]:
    """Dotted name -> file, for every module of the package."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _path_of(module: str) -> str:
    return _modules()[module].relative_to(ROOT).as_posix()


@functools.cache
def _imports() -> tuple[Import, ...]:
    """Every import of a praisonai module by a praisonai module, resolved to the module."""
    return tuple(found for name, path in _modules().items() for found in _imports_of(name, path))


def _imports_of(importer: str, path: Path) -> Iterator[Import]:
    is_package = path.name == "__init__.py"
    for node, type_checking in _import_nodes(ast.parse(path.read_text(), str(path)).body, False):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "praisonai":
                    yield Import(importer, _existing(alias.name), (), node.lineno, type_checking)
            continue
        base = _absolute(importer, is_package, node.module, node.level)
        if base.split(".")[0] != "praisonai":
            continue
        taken: dict[str, list[str]] = {}
        for alias in node.names:
            submodule = f"{base}.{alias.name}"
            if submodule in _modules():  # `from package import module`: that module is imported
                taken.setdefault(submodule, [])
            else:
                taken.setdefault(_existing(base), []).append(alias.name)
        for module, names in taken.items():
            yield Import(importer, module, tuple(names), node.lineno, type_checking)


def _import_nodes(
    nodes: Iterable[ast.AST], type_checking: bool
) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Import statements anywhere (functions included), each with whether it is type checking's."""
    for node in nodes:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, type_checking
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from _import_nodes(node.body, True)
            yield from _import_nodes(node.orelse, type_checking)
        else:
            yield from _import_nodes(ast.iter_child_nodes(node), type_checking)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _absolute(importer: str, is_package: bool, module: str | None, level: int) -> str:
    if level == 0:
        return module or ""
    parts = importer.split(".")
    anchor = parts if is_package else parts[:-1]
    anchor = anchor[: len(anchor) - (level - 1)]
    return ".".join([*anchor, *([module] if module else [])])


def _existing(module: str) -> str:
    """The module itself, or its nearest parent that is a module (an attribute was named)."""
    while module not in _modules() and "." in module:
        module = module.rsplit(".", 1)[0]
    return module
