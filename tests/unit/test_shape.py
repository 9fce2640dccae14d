"""The provider contract's shape, held by numbers: an optional ability is a part the provider
holds (``compute.abilities.part``), not one more mixin reaching into the provider's private state.

Counted from the source (reach-ins, import cycles) and from the classes (MRO, members). Each budget
is a ceiling: lower it when the code gets smaller, never raise it to let a mixin back in.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
import test_structure as structure

PACKAGE = Path(__file__).resolve().parents[2] / "praisonai"

#: ``x._name`` where ``x`` is not ``self``, ``cls``, ``super()`` or a module: one object using
#: another's private state.
REACH_INS_MAX = 47
#: Of those, in pause code (``abilities/pause.py`` and every provider's ``_pause.py``).
PAUSE_REACH_INS_MAX = 0
#: Issue 44 asks 6 classes, 55 members and 10 for docker: every optional ability is a part now.
CONTRACT_MRO_MAX = 5
#: Public and private names on ``ComputeProvider`` (dunders aside). An ability of several calls is
#: one front object (``provider.files``, ``provider.processes``), not one member per call.
CONTRACT_MEMBERS_MAX = 56  # 55, and the snapshotter part (issue 45)
DOCKER_MRO_MAX = 8


def test_objects_seldom_reach_into_each_others_private_names() -> None:
    found = _reach_ins()
    total = sum(len(lines) for lines in found.values())
    worst = sorted(found.items(), key=lambda item: -len(item[1]))[:10]
    listed = "".join(
        f"\n  {path}: {len(lines)} (lines {', '.join(map(str, lines[:8]))})" for path, lines in worst
    )
    assert total <= REACH_INS_MAX, f"{total} reach-ins, the budget is {REACH_INS_MAX}; the most:{listed}"


def test_pause_code_holds_its_collaborators_instead_of_reaching_into_the_provider() -> None:
    pause = {path: lines for path, lines in _reach_ins().items() if Path(path).stem in ("_pause", "pause")}
    total = sum(len(lines) for lines in pause.values())
    assert total <= PAUSE_REACH_INS_MAX, (
        f"{total} reach-ins in pause code (budget {PAUSE_REACH_INS_MAX}): {pause}"
    )


def test_the_contract_is_small() -> None:
    classes, members = _shape("praisonai.compute.base", "ComputeProvider")
    assert len(classes) <= CONTRACT_MRO_MAX, f"ComputeProvider's MRO has {len(classes)} classes: {classes}"
    assert len(members) <= CONTRACT_MEMBERS_MAX, (
        f"ComputeProvider has {len(members)} members (budget {CONTRACT_MEMBERS_MAX}): {members}"
    )


def test_docker_is_a_few_classes_holding_parts() -> None:
    classes, _ = _shape("praisonai.compute.providers.docker", "DockerCompute")
    assert len(classes) <= DOCKER_MRO_MAX, f"DockerCompute's MRO has {len(classes)} classes: {classes}"


def _shape(module: str, name: str) -> tuple[list[str], list[str]]:
    """The class's MRO and members as its source makes them, read in a fresh interpreter: a
    test in this one may have marked the class (Modal's synchronicity sets ``_sync_wrapped_*``)."""
    code = (
        f"import json; from {module} import {name} as k\n"
        "m = {n for c in k.__mro__ for n in vars(c) if not (n.startswith('__') and n.endswith('__'))}\n"
        "print(json.dumps([[c.__name__ for c in k.__mro__], sorted(m)]))"
    )
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    classes, members = json.loads(found.stdout)
    return classes, members


@pytest.mark.parametrize(
    "provider", sorted(p.name for p in (PACKAGE / "compute/providers").iterdir() if p.is_dir())
)
def test_a_providers_modules_import_each_other_one_way(provider: str) -> None:
    """Within one provider package no import circle, not even through ``if TYPE_CHECKING:``: a
    part that names the provider class to type its back-reference is the mixin shape again."""
    prefix = f"praisonai.compute.providers.{provider}"
    graph: dict[str, dict[str, structure.Import]] = {
        name: {} for name in structure._modules() if name == prefix or name.startswith(prefix + ".")
    }
    for found in structure._imports():
        if found.importer in graph and found.module in graph and found.module != found.importer:
            graph[found.importer].setdefault(found.module, found)
    tangles = structure._tangles(graph)
    assert not tangles, "\n".join(structure._describe(graph, tangle) for tangle in tangles)


def _reach_ins() -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        modules = _imported_names(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _private(node.attr) and not _own(node.value, modules):
                found.setdefault(path.relative_to(PACKAGE.parent).as_posix(), []).append(node.lineno)
    return found


def _own(value: ast.expr, modules: set[str]) -> bool:
    """``self._x``, ``cls._x``, ``super()._x`` and ``module._x`` are not reach-ins."""
    if isinstance(value, ast.Name):
        return value.id in ("self", "cls") or value.id in modules
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "super"


def _imported_names(tree: ast.Module) -> set[str]:
    names = set(sys.stdlib_module_names)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.update(alias.asname or alias.name for alias in node.names)
    return names


def _private(name: str) -> bool:
    return name.startswith("_") and not _dunder(name)


def _dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


def test_the_moved_calls_answer_under_their_old_names_for_one_release(home: Path) -> None:
    from praisonai import _portal
    from praisonai.compute.providers.local import LocalCompute

    provider = LocalCompute()
    iid = _portal.call(provider.provision).instance_id
    try:
        with pytest.warns(DeprecationWarning, match=r"make_dir\(\.\.\.\) is provider\.files\.mkdir"):
            _portal.call(provider.make_dir, iid, "made")
        assert _portal.call(provider.files.exists, iid, "made")
        with pytest.warns(DeprecationWarning, match=r"provider\.bind_env\(\.\.\.\) is provider\.processes"):
            _portal.call(provider.bind_env, iid, {"A": "1"})
        with pytest.raises(AttributeError, match="no attribute 'list_filez'"):
            provider.list_filez  # noqa: B018  (a typo is still an AttributeError)
    finally:
        _portal.call(provider.shutdown, iid)
