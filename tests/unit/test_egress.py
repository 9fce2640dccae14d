"""Egress allowlists without an engine: environment.yaml's Claude Managed Agents shape
(``networking: {type: limited, allowed_hosts: [...]}``) and docker's proxy filter and naming."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from praisonai import ComputeConfig, ConfigError
from praisonai._errors import EnvironmentFileError
from praisonai.compute import egress
from praisonai.compute.providers.docker import _egress
from praisonai.sandbox.environment import load_environment_file


def _load(tmp_path: Path, text: str) -> dict[str, object]:
    path = tmp_path / "environment.yaml"
    path.write_text(textwrap.dedent(text))
    return load_environment_file(path).config_fields()


def test_limited_networking_is_an_allowlist(tmp_path: Path) -> None:
    text = "networking: {type: limited, allowed_hosts: [pypi.org, files.pythonhosted.org]}\n"
    assert _load(tmp_path, text) == {"network": {"allow": ["pypi.org", "files.pythonhosted.org"]}}
    assert _load(tmp_path, "networking: {type: unrestricted}\n") == {"network": "unrestricted"}
    assert _load(tmp_path, "networking: {type: limited}\n") == {"network": "none"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("networking: {type: open}\n", "networking must be"),
        ("network: none\nnetworking: {type: limited}\n", "give network or networking, not both"),
    ],
)
def test_bad_networking_is_one_sentence(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(EnvironmentFileError, match=expected):
        _load(tmp_path, text)


def test_one_network_per_allowlist_whatever_its_order() -> None:
    one = _egress.network_mode(ComputeConfig(network={"allow": ["b.org", "A.org"]}))
    assert one == _egress.network_mode(ComputeConfig(network={"allow": ["a.org", "b.org"]}))
    assert one != _egress.network_mode(ComputeConfig(network={"allow": ["a.org"]}))
    assert _egress.network_mode(ComputeConfig(network="none")) == "none"
    assert _egress.network_mode(ComputeConfig()) == "bridge"


def test_the_filter_matches_whole_names_only() -> None:
    rules = [re.compile(line) for line in egress.host_filter(["pypi.org", "*.github.com"]).splitlines()]
    allowed = lambda host: any(rule.search(host) for rule in rules)  # noqa: E731
    assert allowed("pypi.org") and allowed("api.github.com")
    for host in ("pypixorg", "pypi.org.evil", "evilpypi.org", "github.com.evil", "xgithub.com"):
        assert not allowed(host), host


def test_cidr_blocks_and_ports_are_refused_on_docker() -> None:
    with pytest.raises(ConfigError, match="not CIDR blocks or ports"):
        _egress.network_mode(ComputeConfig(network={"allow": ["10.0.0.0/8"]}))
