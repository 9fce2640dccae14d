"""A workspace on a provider object written to PraisonAI's protocol: its exec takes the
environment in the command line, so a repository token is refused there in one sentence (and
the instance made for it removed)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_praisonai_shared_compute import FakeCompute  # PraisonAI's own fake, as it wrote it

from praisonai._errors import ConfigError
from praisonai.managed.shared import SharedCompute


@pytest.fixture(autouse=True)
def _isolated(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def test_a_token_clone_is_refused_and_the_instance_removed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRAISONAI_TEST_FOREIGN_TOKEN", "tok-foreign-1")
    fake = FakeCompute()
    shared = SharedCompute(
        fake, repo="https://example.invalid/o/r", repo_token_env="PRAISONAI_TEST_FOREIGN_TOKEN"
    )
    with pytest.raises(
        ConfigError, match=r"^a repository token cannot be kept off the command line on fake"
    ) as caught:
        shared.ensure()
    assert "tok-foreign-1" not in str(caught.value) and shared.instance_id is None
    assert fake.provisioned == len(fake.shutdowns) == 1  # made, refused, removed
    assert not [c for c in fake.commands if "tok-foreign-1" in str(c)]
