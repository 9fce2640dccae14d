"""ComputeConfig: validation, PraisonAI compatibility, hashes."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from praisonai import ComputeConfig, ConfigError
from praisonai._types import Capability
from praisonai.compute.capabilities import unmet


def test_defaults_mean_provider_default() -> None:
    cfg = ComputeConfig.coerce(None)
    assert cfg.image is None and cfg.cpu is None and cfg.working_dir == "/workspace"


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"cpu": -1}, "cpu"),
        ({"env": {"1BAD": "x"}}, "env"),
        ({"packages": {"pip": ["--index-url=http://evil"]}}, "packages"),
        ({"working_dir": "relative"}, "working_dir"),
        ({"mount_paths": ["/a"]}, "mount_paths"),
        ({"network": "sometimes"}, "network"),
        ({"imgae": "typo"}, "imgae"),
        ({"ports": [0]}, "ports: 0 is not a TCP port"),
        ({"ports": [8000, 8000]}, "ports: 8000 is listed twice"),
        ({"ports": [True]}, "ports"),
    ],
)
def test_invalid_values_name_the_field(data: dict, needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        ComputeConfig.coerce(data)


@dataclass
class PraisonAIComputeConfig:  # the shape of PraisonAI's own dataclass
    image: str = "python:3.12-slim"
    cpu: int = 1
    memory_mb: int = 1024
    gpu: str | None = None
    packages: dict = field(default_factory=dict)
    setup: list = field(default_factory=list)
    env: dict = field(default_factory=dict)
    working_dir: str = "/workspace"
    networking: dict = field(default_factory=lambda: {"type": "unrestricted"})
    idle_timeout_s: int = 300


def test_praisonai_config_object_is_accepted() -> None:
    theirs = PraisonAIComputeConfig(memory_mb=2048, env={"A": "1"}, networking={"type": "limited"})
    cfg = ComputeConfig.coerce(theirs)
    assert cfg.memory_mb == 2048 and cfg.env == {"A": "1"} and cfg.network == "none"
    assert cfg.image is None and cfg.cpu is None  # their defaults stay "provider default"


def test_definition_hash_is_value_free() -> None:
    a = ComputeConfig.coerce({"env": {"TOKEN": "one"}})
    b = ComputeConfig.coerce({"env": {"TOKEN": "two"}})
    c = ComputeConfig.coerce({"env": {"OTHER": "one"}})
    assert a.definition_hash() == b.definition_hash() != c.definition_hash()


def test_ports_change_the_definition_only_when_given() -> None:
    # the hash every config had before ``ports`` existed: its captures must still be found
    assert ComputeConfig().definition_hash() == "87e753d9f9ae9778"
    assert ComputeConfig(ports=[8000]).definition_hash() != ComputeConfig().definition_hash()


def test_ports_are_refused_by_a_provider_without_the_capability() -> None:
    assert [n.field for n in unmet(ComputeConfig(ports=[8000]), set())] == ["ports"]
    assert unmet(ComputeConfig(ports=[8000]), {Capability.PORTS}) == []
