"""The package's layout, as issue 28 left it: the wheel ships the product and not its test rig,
features live in folders rather than in families of prefixed modules, the formatter lays out
the code (``# fmt: skip`` is for real tables) and no layering contract has an exception for a
fake. Read from the source and from a built wheel, so a change that breaks a rule names it.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import setuptools
import tomllib

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "praisonai"

#: What the package's ``testing`` modules offer users: the conformance suite and its kit,
#: FakeProvider, the throwaway sshd. The vendors' wire fakes live in tests/fakes.
OFFERED_FOR_TESTS = {
    "__init__.py",
    "_kit.py",
    "contract.py",
    "egress.py",
    "exec.py",
    "fake.py",
    "files.py",
    "pause.py",
    "ports.py",
    "pty.py",
    "snapshots.py",
    "sshd.py",
    "workspace.py",
}
#: Folders whose modules are grouped by feature (issue 28, item 2).
BY_FEATURE = (PACKAGE / "managed", PACKAGE / "cli")
MAX_FMT_SKIPS = 20


def test_the_wheel_holds_no_fake_but_those_offered_to_users() -> None:
    """The wheel's modules, found as setuptools finds them for it (pyproject.toml's
    ``[tool.setuptools.packages.find]``), without building one: no network, no build backend."""
    find = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    packages = setuptools.find_packages(str(ROOT), include=find["include"])
    names = [
        p.relative_to(ROOT).as_posix()
        for pkg in packages
        for p in (ROOT / pkg.replace(".", "/")).glob("*.py")
    ]
    assert "praisonai/compute/base.py" in names  # the finder found the package
    testing = {n.removeprefix("praisonai/compute/testing/") for n in names if "/compute/testing/" in n}
    assert testing <= OFFERED_FOR_TESTS, (
        f"the wheel ships test apparatus: {sorted(testing - OFFERED_FOR_TESTS)}"
    )
    rig = [n for n in names if "fake" in n and not n.endswith("compute/testing/fake.py")]
    assert not rig, f"the wheel ships test apparatus: {rig}"


def test_no_module_of_the_package_imports_the_tests_fakes() -> None:
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                modules = [node.module]
            offenders += [
                f"{path.relative_to(ROOT)}:{node.lineno}" for m in modules if m.split(".")[0] == "fakes"
            ]
    assert not offenders, f"the package imports the tests' fakes at {offenders}"


def test_features_are_folders_not_prefix_families() -> None:
    """In managed/ and cli/, no two modules of a folder share a first word where one goes on
    (``_config_compute`` beside ``_config_hosted``, ``_instance`` beside ``_instance_search``),
    and no module is named after a sibling folder (``hosted_admin.py`` beside ``hosted/``)."""
    families = []
    for top in BY_FEATURE:
        for folder in [top, *(p for p in top.rglob("*") if p.is_dir() and p.name != "__pycache__")]:
            by_word: dict[str, list[str]] = defaultdict(list)
            for module in folder.glob("*.py"):
                if module.stem != "__init__":
                    by_word[module.stem.lstrip("_").split("_")[0]].append(module.stem)
            for word, stems in by_word.items():
                grouped = len(stems) > 1 and any(s.lstrip("_") != word for s in stems)
                if grouped or (folder / word).is_dir():
                    families.append(f"{folder.relative_to(ROOT)}: {sorted(stems)}")
    assert not families, "prefix families standing in for folders:\n  " + "\n  ".join(families)


def test_the_formatter_lays_out_the_code() -> None:
    skips = {
        path.relative_to(ROOT).as_posix(): text.count("fmt: skip")
        for path in PACKAGE.rglob("*.py")
        if "fmt: skip" in (text := path.read_text())
    }
    total = sum(skips.values())
    assert total < MAX_FMT_SKIPS, f"{total} `# fmt: skip` (keep them for real tables): {skips}"


def test_no_layering_contract_makes_an_exception_for_a_fake() -> None:
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    exceptions = [
        rule for c in contracts for rule in c.get("ignore_imports", []) if "testing" in rule or "fake" in rule
    ]
    assert not exceptions, f"import-linter exceptions for test apparatus: {exceptions}"
