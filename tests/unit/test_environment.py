""".praisonai/environment.yaml: discovery, the strict schema, errors with file/line/key, precedence, hashes.

Real files in temporary directories; nothing of ours is mocked.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from praisonai import ComputeConfig, ConfigError
from praisonai._errors import EnvironmentFileError
from praisonai.compute.config import NetworkAllow
from praisonai.sandbox.environment import (
    EnvironmentDefinition,
    effective_config,
    find_environment_file,
    load_environment_file,
    merge_fields,
)

SHOWN = ".praisonai/environment.yaml"


def write_env(directory: Path, text: str) -> Path:
    path = directory / ".praisonai" / "environment.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository root (it holds .git) that is also the working directory."""
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    monkeypatch.chdir(root)
    return root


def problems_of(text: str, repo: Path) -> list[str]:
    write_env(repo, text)
    with pytest.raises(EnvironmentFileError) as info:
        load_environment_file(repo / SHOWN)
    assert str(info.value) == "\n".join(info.value.problems)
    return list(info.value.problems)


# ---- discovery ---------------------------------------------------------------------------------


def test_found_from_a_subdirectory_up_to_the_repo_root(repo: Path) -> None:
    path = write_env(repo, "image: x\n")
    deep = repo / "src" / "pkg"
    deep.mkdir(parents=True)
    assert find_environment_file(deep) == path
    assert find_environment_file() == path  # default start: the working directory


def test_the_nearest_file_wins(repo: Path) -> None:
    write_env(repo, "image: root\n")
    nested = write_env(repo / "service", "image: service\n")
    assert find_environment_file(repo / "service") == nested


def test_discovery_stops_at_the_repo_root(tmp_path: Path) -> None:
    write_env(tmp_path, "image: stray\n")  # above the repository: must never be read
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "src").mkdir()
    assert find_environment_file(root / "src") is None
    assert find_environment_file(root) is None


def test_a_git_file_marks_the_root_too(tmp_path: Path) -> None:
    write_env(tmp_path, "image: stray\n")
    worktree = tmp_path / "wt"
    worktree.mkdir()
    (worktree / ".git").write_text("gitdir: /elsewhere\n")  # worktrees and submodules
    assert find_environment_file(worktree) is None


def test_outside_a_repository_only_the_start_directory(tmp_path: Path) -> None:
    assert not any((d / ".git").exists() for d in [tmp_path, *tmp_path.parents]), "tmp is inside a repo"
    write_env(tmp_path, "image: parent\n")
    child = tmp_path / "child"
    child.mkdir()
    assert find_environment_file(child) is None
    assert find_environment_file(tmp_path) == tmp_path / SHOWN


# ---- the schema --------------------------------------------------------------------------------


def test_a_full_definition_maps_onto_compute_config(repo: Path) -> None:
    write_env(
        repo,
        """\
        image: python:3.12
        packages:
          pip: [pkg>=1.0, "name[extra]==2.0"]
          apt: [jq]
        setup: make deps
        refresh: [git pull, make]
        env:
          PORT: 0755
          COUNTRY: NO
          RATIO: 1.50
          NAME: plain
        resources: {cpu: 2, memory_mb: 2048, gpu: 1, disk: 4096}
        network: {allow: [pypi.org, "*.github.com"]}
        backend: docker
        working_dir: /work/
        mount_paths: ["/data:/data:ro"]
        idle_timeout: 600
        ttl: 3600
        capture: false
        """,
    )
    effective = effective_config()
    cfg = effective.config
    assert (effective.source, effective.backend) == (repo / SHOWN, "docker")
    assert cfg.packages == {"pip": ["pkg>=1.0", "name[extra]==2.0"], "apt": ["jq"]}
    assert (cfg.setup, cfg.refresh) == (["make deps"], ["git pull", "make"])
    # Scalars become the text the file spells, not what YAML 1.1 makes of it (493, False, 1.5).
    assert cfg.env == {"PORT": "0755", "COUNTRY": "NO", "RATIO": "1.50", "NAME": "plain"}
    assert (cfg.cpu, cfg.memory_mb, cfg.gpu, cfg.disk_mb) == (2.0, 2048, 1, 4096)
    assert cfg.network == NetworkAllow(allow=["pypi.org", "*.github.com"])
    assert (cfg.working_dir, cfg.mount_paths) == ("/work", ["/data:/data:ro"])
    assert (cfg.idle_timeout_s, cfg.ttl_s, cfg.capture) == (600, 3600, False)


@pytest.mark.parametrize("text", ["", "# nothing yet\n", "image:\nenv:\n"])
def test_an_empty_file_is_the_empty_definition(repo: Path, text: str) -> None:
    write_env(repo, text)
    assert load_environment_file(repo / SHOWN) == EnvironmentDefinition()
    assert effective_config().config == ComputeConfig()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("imgae: x\n", "1: imgae: unknown key (did you mean image? allowed: image, packages, setup"),
        (
            "image: x\nresources:\n  cpu: 1\n  mem: 12\n",
            "4: resources.mem: unknown key (allowed: cpu, memory_mb, gpu, disk)",
        ),
        ("resources:\n  memory_mb: 2g\n", "2: resources.memory_mb: must be a whole number, not a string"),
        ("setup: [ok, 3]\n", "1: setup[1]: must be a string, not 3"),
        ("image: x\n\nnetwork: open\n", "3: network: must be 'none', 'unrestricted' or {allow: [hosts]}"),
        ("network: {allow: [a.org], deny: [b.org]}\n", "1: network.deny: unknown key (allowed: allow)"),
        ("network: {allow: []}\n", "1: network.allow: must not be empty"),
        ('capture: "false"\n', "1: capture: must be true or false (unquoted), not a string"),
        ("env:\n  ok: x\n  1BAD: y\n", "3: env.1BAD: '1BAD' is not a valid environment variable name"),
        ("working_dir: src\n", "1: working_dir: must be an absolute path, not 'src'"),
        ("runtime: gvisor\n", "1: runtime: must be 'runc' or 'runsc'"),
        ("mount_paths: [/a]\n", "1: mount_paths[0]: mount '/a' is not HOST:INSTANCE[:ro]"),
        ("idle_timeout: 0\n", "1: idle_timeout: must be greater than 0"),
        ("backend: dokcer\n", "1: backend: unknown compute provider 'dokcer' (did you mean docker?"),
        ("image: a\nimage: b\n", "2: image: duplicate key (first on line 1)"),
        ("- image: x\n", "1: the top level must be a mapping of keys (allowed: image, packages"),
        ("image: x\nsetup: [a, b\n", "3:1: invalid YAML: expected ',' or ']'"),
        ("image: x\nenv:\n  A: 1\n   B: 2\n", "4:5: invalid YAML: mapping values are not allowed here"),
    ],
)
def test_each_problem_names_file_line_key_and_what_is_allowed(repo: Path, text: str, expected: str) -> None:
    problems = problems_of(text, repo)
    assert any(p.startswith(f"{SHOWN}:{expected}") for p in problems), problems


def test_package_specifiers_are_checked_by_compute_configs_rules(repo: Path) -> None:
    text = """\
    packages:
      pip:
        - pkg>=1.0
        - name[extra]==2.0
        - --index-url=x
      apt: ["a;rm -rf /"]
    """
    problems = problems_of(text, repo)
    assert [p.split(": ", 2)[:2] for p in problems] == [
        [f"{SHOWN}:5", "packages.pip[2]"],
        [f"{SHOWN}:6", "packages.apt[0]"],
    ]
    assert "'--index-url=x' is not a package specifier" in problems[0]
    assert "no options" in problems[0]  # what is allowed
    write_env(repo, 'packages:\n  pip: [pkg>=1.0, "name[extra]==2.0"]\n')
    assert effective_config().config.packages == {"pip": ["pkg>=1.0", "name[extra]==2.0"]}


def test_every_problem_is_listed_in_line_order(repo: Path) -> None:
    problems = problems_of("ttl: -1\nimgae: x\ncapture: 'no'\n", repo)
    assert [p.split(":")[1] for p in problems] == ["1", "2", "3"]


def test_env_values_never_appear_in_errors(repo: Path) -> None:
    for text in ("env: TOKEN=hunter2\n", "env:\n  TOKEN: [hunter2]\n", "env:\n  TOKEN:\n"):
        problems = problems_of(text, repo)
        assert problems and not any("hunter2" in p for p in problems)


def test_a_missing_explicit_file_is_an_error(repo: Path) -> None:
    with pytest.raises(EnvironmentFileError, match=r"nope\.yaml: no such file"):
        effective_config(path=repo / "nope.yaml")


def test_an_invalid_file_is_a_config_error(repo: Path) -> None:
    write_env(repo, "capture: maybe\n")
    with pytest.raises(ConfigError):  # EnvironmentFileError is one: callers catch a single family
        effective_config()


# ---- precedence --------------------------------------------------------------------------------

FILE = """\
image: python:3.12
packages: {pip: [requests, rich]}
env: {A: file, B: file}
resources: {cpu: 2}
backend: local
"""


def test_explicit_fields_replace_the_files(repo: Path) -> None:
    write_env(repo, FILE)
    cfg = effective_config({"image": "debian:12", "cpu": None}).config
    assert (cfg.image, cfg.cpu) == ("debian:12", None)  # explicitly None is explicit too


def test_env_merges_key_by_key_explicit_wins(repo: Path) -> None:
    write_env(repo, FILE)
    merged = effective_config({"env": {"B": "arg", "C": "arg"}}).config.env
    assert merged == {"A": "file", "B": "arg", "C": "arg"}


def test_packages_merge_per_manager_without_duplicates(repo: Path) -> None:
    write_env(repo, FILE)
    cfg = effective_config({"packages": {"pip": ["rich", "httpx"], "apt": ["jq"]}}).config
    assert cfg.packages == {"pip": ["requests", "rich", "httpx"], "apt": ["jq"]}


def test_only_fields_a_config_object_sets_are_explicit(repo: Path) -> None:
    write_env(repo, FILE)
    cfg = effective_config(ComputeConfig(memory_mb=512)).config
    assert (cfg.image, cfg.cpu, cfg.memory_mb) == ("python:3.12", 2.0, 512)


def test_the_files_backend_is_reported_not_forced(repo: Path) -> None:
    write_env(repo, FILE)
    assert effective_config().backend == "local"
    assert effective_config(use_file=False).backend is None


def test_use_file_false_and_an_explicit_path(repo: Path, tmp_path: Path) -> None:
    write_env(repo, FILE)
    assert effective_config(use_file=False).config == ComputeConfig()
    other = write_env(tmp_path / "elsewhere", "image: other\n")
    effective = effective_config(path=other)
    assert (effective.source, effective.config.image) == (other, "other")


def test_merge_rule_directly() -> None:
    base = {"env": {"A": "1"}, "packages": {"pip": ["a", "b"]}, "image": "x", "setup": ["s"]}
    explicit = {"env": {"A": "2"}, "packages": {"pip": ["b", "c"], "npm": ["n"]}, "setup": []}
    assert merge_fields(base, explicit) == {
        "env": {"A": "2"},
        "packages": {"pip": ["a", "b", "c"], "npm": ["n"]},
        "image": "x",
        "setup": [],
    }


# ---- hashes ------------------------------------------------------------------------------------


def test_definition_hash_ignores_env_values_capture_key_does_not(repo: Path) -> None:
    write_env(repo, "setup: make\nenv: {TOKEN: one}\n")
    first = effective_config().config
    write_env(repo, "setup: make\nenv: {TOKEN: two}\n")
    second = effective_config().config
    assert first.definition_hash() == second.definition_hash()
    assert first.capture_key() != second.capture_key()
    write_env(repo, "setup: make\nenv: {OTHER: one}\n")
    assert effective_config().config.definition_hash() != first.definition_hash()


# ---- networking: Claude Managed Agents' spelling of network -------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("networking: {type: limited, allowed_hosts: [pypi.org, api.example.com]}\n",
         NetworkAllow(allow=["pypi.org", "api.example.com"])),
        ("networking: {type: limited, allowed_hosts: []}\n", "none"),
        ("networking: {type: unrestricted}\n", "unrestricted"),
    ],
)  # fmt: skip
def test_networking_limited_is_the_network_allowlist(repo: Path, text: str, expected: object) -> None:
    write_env(repo, text)
    assert effective_config().config.network == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("networking: {type: limited, allowed_hosts: [pypi.org]}\nnetwork: none\n", "not both"),
        ("networking: {type: open}\n", "networking must be"),
        ("networking: {type: limited, allowed_hosts: ['bad host']}\n", "is not a host name"),
    ],
)
def test_networking_mistakes_are_one_sentence(repo: Path, text: str, expected: str) -> None:
    problems = problems_of(text, repo)
    assert len(problems) == 1 and expected in problems[0], problems
