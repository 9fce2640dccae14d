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


def test_the_filter_matches_whole_names_on_80_and_443_only() -> None:
    """Each rule as tinyproxy applies it to the request target (case-insensitive, anchored): a
    listed name by plain HTTP on 80 or by CONNECT on 443, nothing it would read otherwise."""
    rules = [re.compile(line, re.I) for line in egress.host_filter(["pypi.org", "*.github.com"]).splitlines()]
    allowed = lambda target: any(rule.search(target) for rule in rules)  # noqa: E731
    for target in ("http://pypi.org/", "HTTP://PYPI.ORG:80/simple", "http://pypi.org", "pypi.org:443"):
        assert allowed(target), target
    assert allowed("http://api.github.com/x") and allowed("a.b.github.com:443")
    for target in (
        "http://pypixorg/", "http://pypi.org.evil/", "http://evilpypi.org/", "http://xgithub.com/",
        "http://github.com.evil/", "http://pypi.org:8080/", "http://pypi.org:080/", "http://pypi.org:80@evil/",
        "http://x@pypi.org/", "pypi.org:80", "pypi.org:4430", "http://evil:8080#.github.com/",
        "http://a@evil:8080/.github.com/", "evil:8080/.github.com:443",
    ):  # fmt: skip
        assert not allowed(target), target


@pytest.mark.parametrize(
    "entry",
    [
        "172.17.0.1", "172.17.0.1:8000", "127.1", "2130706433", "0x7f.1", "0x7f000001", "017700000001",
        "127.0.0.1.", "*.10.0.0.1", "::1", "[::1]", "[::1]:80", "::ffff:127.0.0.1", "fe80::1%eth0",
        "[fe80::1%25eth0]",
    ],
)  # fmt: skip
def test_an_address_in_any_spelling_is_refused_names_only(entry: str) -> None:
    with pytest.raises(
        ConfigError, match=f"network allow '{re.escape(entry.lower())}' is an IP address.*names only"
    ):
        _egress.network_mode(ComputeConfig(network={"allow": ["pypi.org", entry]}))


def test_names_that_look_numeric_are_still_names() -> None:
    names = ["1password.com", "123.example.org", "x0x7f.dev", "0xdeadbeef.cafe"]
    assert _egress.allowlist(ComputeConfig(network={"allow": names})) == sorted(names)


def test_cidr_blocks_and_ports_are_refused_on_docker() -> None:
    with pytest.raises(ConfigError, match="not CIDR blocks or ports"):
        _egress.network_mode(ComputeConfig(network={"allow": ["10.0.0.0/8"]}))
