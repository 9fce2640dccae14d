"""The one provisioning path: ``provisioning.plan`` (file, merge, provider) and the plan a sandbox
and a SharedCompute keep. Real files, real local instances; nothing of ours is mocked."""

from __future__ import annotations

from pathlib import Path

import pytest

from praisonai import ConfigError, Sandbox
from praisonai.compute.base import ComputeProvider
from praisonai.compute.providers.local import LocalCompute
from praisonai.compute.registry import resolve_compute
from praisonai.managed import SharedCompute
from praisonai.sandbox.provisioning import ProvisionPlan, plan

FILE = "backend: local\nenv: {FROM_FILE: file, SHARED: file}\nidle_timeout: 120\n"


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository root, the working directory, declaring its environment."""
    (tmp_path / ".git").mkdir()
    (tmp_path / ".praisonai").mkdir()
    (tmp_path / ".praisonai" / "environment.yaml").write_text(FILE)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_plan_reads_the_file_merges_explicit_over_it_and_takes_its_backend(repo: Path) -> None:
    chosen = plan(config={"idle_timeout_s": 60}, env={"SHARED": "arg"})
    assert chosen.source == repo / ".praisonai" / "environment.yaml" and chosen.backend == "local"
    assert chosen.provider.name == "local"
    assert chosen.config.env == {"FROM_FILE": "file", "SHARED": "arg"} and chosen.config.idle_timeout_s == 60
    assert chosen.definition is not None and chosen.definition.idle_timeout == 120


@pytest.mark.usefixtures("repo")
def test_plan_without_the_file_and_with_a_named_provider() -> None:
    bare = plan("local", environment=False)
    assert (bare.source, bare.backend, bare.definition, bare.config.env) == (None, None, None, {})
    given = LocalCompute()
    assert plan(given).provider is given  # a provider object is used as it is


@pytest.mark.usefixtures("repo")
def test_resolve_is_asked_for_the_name_plan_settled_on() -> None:
    asked: list[object] = []

    def resolve(name: object) -> ComputeProvider:
        asked.append(name)
        return resolve_compute(name)

    plan(resolve=resolve)
    plan("local", resolve=resolve, environment=False)
    assert asked == ["local", "local"]


@pytest.mark.usefixtures("repo")
def test_plan_refuses_an_environment_that_is_no_path() -> None:
    with pytest.raises(ConfigError, match="environment must be a path, True, False or None"):
        plan(environment=3)  # type: ignore[arg-type]


@pytest.mark.usefixtures("repo", "home")
def test_a_sandbox_keeps_the_plan_it_was_made_from() -> None:
    with Sandbox.create(env={"SHARED": "arg"}) as sb:
        assert isinstance(sb.plan, ProvisionPlan) and sb.plan.provider is sb.provider
        assert sb.plan.config.env["SHARED"] == "arg"
        assert sb.exec('echo "$FROM_FILE $SHARED"').stdout == "file arg\n"
        with Sandbox.connect(sb.id) as borrowed:
            assert borrowed.plan is None
    chosen = plan("local", environment=False)
    with Sandbox.from_plan(chosen) as sb:
        assert sb.plan is chosen and sb.exec('echo "${FROM_FILE:-unset}"').stdout == "unset\n"


@pytest.mark.usefixtures("repo", "home")
def test_shared_compute_provisions_through_the_same_plan() -> None:
    with SharedCompute(config={"env": {"SHARED": "arg"}}) as shared:
        shared.ensure()
        assert shared.plan is not None and shared.plan.backend == "local"
        assert shared.provider is shared.plan.provider
        assert shared.plan.config.env == {"FROM_FILE": "file", "SHARED": "arg"}
