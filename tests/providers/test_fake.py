"""FakeProvider: a provider made of the contract's primitives alone (a native exec, no channel)
passes the conformance checks that apply to it (test_conformance.py), and the generic lifecycle
(ledger, setup, captures as snapshots) works through it unchanged."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from praisonai import _portal
from praisonai._errors import ProvisionError, UnsupportedFeatureError
from praisonai._ledger import Ledger
from praisonai._types import Capability
from praisonai.compute import registry
from praisonai.compute.channel import ChannelMixin
from praisonai.compute.config import ComputeConfig
from praisonai.compute.testing import Context
from praisonai.compute.testing.fake import FakeProvider

PROVIDER = "fake"  # the provider and ctx fixtures: tests/providers/conftest.py


def test_it_is_a_contract_only_provider(ctx: Context) -> None:
    assert not isinstance(ctx.provider, ChannelMixin)
    assert Capability.PROCESSES not in ctx.provider.capabilities


def test_unsupported_abilities_say_so_in_one_sentence(ctx: Context) -> None:
    p, iid = ctx.provider, ctx.instance_id
    for call in (
        lambda: p.processes.start(iid, "true"),
        lambda: p.processes.list(iid),
        lambda: p.open_session(iid),
        lambda: p.processes.bind_env(iid, {"A": "1"}),
    ):
        with pytest.raises(UnsupportedFeatureError, match="the fake provider does not support"):
            _portal.call(call)


def test_registered_by_name(ctx: Context) -> None:
    assert isinstance(registry.resolve_compute("fake"), FakeProvider)
    assert "fake" in registry.available_providers()


@pytest.mark.usefixtures("home")
def test_a_capture_is_its_snapshot_and_later_instances_start_from_it(tmp_path: Path) -> None:
    provider = FakeProvider(root=tmp_path)
    marker = uuid.uuid4().hex
    definition = {"setup": [f"echo {marker} >> built"], "refresh": ["echo refreshed >> log"]}
    first = _portal.call(provider.provision, definition)
    second = _portal.call(provider.provision, definition)
    try:
        built = _portal.call(provider.read_file, second.instance_id, "built")
        assert built == f"{marker}\n".encode(), "setup ran again instead of starting from the snapshot"
        assert _portal.call(provider.read_file, second.instance_id, "log") == b"refreshed\n"
        assert [p.name for p in (tmp_path / ".snapshots").iterdir()] == [_tag(definition)]
        assert Ledger.default().get(second.instance_id) is not None
    finally:
        for info in (first, second):
            _portal.call(provider.shutdown, info.instance_id)


@pytest.mark.usefixtures("home")
def test_a_failed_setup_is_never_captured_and_leaves_nothing(tmp_path: Path) -> None:
    provider = FakeProvider(root=tmp_path)
    with pytest.raises(ProvisionError, match="exited 3"):
        _portal.call(provider.provision, {"setup": ["echo partial > built; exit 3"]})
    assert not (tmp_path / ".snapshots").exists() or not any((tmp_path / ".snapshots").iterdir())
    assert _portal.call(provider.list_instances) == []
    assert Ledger.default().entries() == [], "the failed instance's ledger row was left behind"


def _tag(definition: dict[str, list[str]]) -> str:
    return ComputeConfig.coerce(definition).capture_tag()
