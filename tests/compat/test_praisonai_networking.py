"""Networking in PraisonAI's spelling, wherever its users pass it: ``networking={"type": "limited",
"allowed_hosts": [...]}`` (a dict or its ``NetworkingConfig``) is our allowlist where the provider
enforces one (the e2b wire fake's create request carries it) and one sentence where it cannot
(local; docker for a CIDR block, which its proxy cannot match: refused before anything is created,
and before the model is called);
``{"type": "unrestricted"}``, ``"none"`` and ``limited`` with no hosts map as they read."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.e2b import E2BFake
from kit import serving_e2b

from praisonai import (
    ComputeConfig,
    LocalManagedConfig,
    ManagedAgent,
    ManagedConfig,
    Sandbox,
    SharedCompute,
    _portal,
)
from praisonai._errors import ConfigError, UnsupportedFeatureError
from praisonai._ledger import Ledger
from praisonai.integrations.compute import E2BCompute, LocalCompute
from praisonai.integrations.managed_agents import NetworkingConfig, NetworkingType
from praisonai.llm.testing import API_KEY, ScriptedLLM
from praisonai.managed.config import compute_fields
from praisonai.managed.config._hosted import environment_config

# PraisonAI's own SDK: installed by the `compat` extra (in `dev`, which CI installs)
PraisonAIComputeConfig = pytest.importorskip("praisonaiagents.managed.protocols").ComputeConfig
HOSTS = ["pypi.org", "files.pythonhosted.org", "10.0.0.0/8"]
LIMITED = {"type": "limited", "allowed_hosts": HOSTS}
#: PraisonAI's spelling -> our ComputeConfig.network, as plain data
SPELLINGS: list[tuple[object, object]] = [
    ({"type": "unrestricted"}, "unrestricted"),
    ("unrestricted", "unrestricted"),
    (NetworkingConfig(), "unrestricted"),
    ("none", "none"),
    ({"type": "none"}, "none"),
    ("limited", "none"),
    ({"type": "limited"}, "none"),
    ({"type": "limited", "allowed_hosts": []}, "none"),
    (NetworkingConfig(type=NetworkingType.LIMITED), "none"),
    (LIMITED, {"allow": HOSTS}),
    ({**LIMITED, "allow_package_managers": False, "allow_mcp_servers": True}, {"allow": HOSTS}),
    (
        NetworkingConfig(NetworkingType.LIMITED, ["pypi.org"], allow_package_managers=False),
        {"allow": ["pypi.org"]},
    ),
]


def plain(network: object) -> object:
    return network if isinstance(network, str) else network.model_dump()  # type: ignore[attr-defined]


@pytest.mark.parametrize(("networking", "expected"), SPELLINGS)
def test_each_spelling_means_the_same_wherever_it_is_passed(networking: object, expected: object) -> None:
    assert plain(ComputeConfig.coerce({"networking": networking}).network) == expected  # provision({...})
    assert plain(ComputeConfig(networking=networking).network) == expected
    theirs = PraisonAIComputeConfig(networking=networking)  # type: ignore[arg-type]
    assert plain(ComputeConfig.coerce(theirs).network) == expected  # SharedCompute / provision (theirs)
    fields = compute_fields(LocalManagedConfig(networking=networking))  # ManagedAgent's config
    assert fields["network"] == expected


@pytest.mark.parametrize(
    ("networking", "said"),
    [
        (
            {"type": "full"},
            "networking must be {'type': 'unrestricted'}, {'type': 'limited', 'allowed_hosts'",
        ),
        ({"type": "limited", "allowed_hosts": "pypi.org"}, "allowed_hosts must be a list of host names"),
        (
            {"type": "limited", "hosts": ["pypi.org"]},
            "networking has no key 'hosts' (keys: type, allowed_hosts",
        ),
        ({"type": "unrestricted", "allowed_hosts": ["a.org"]}, "allowed_hosts apply to type 'limited' only"),
        (
            {"type": "limited", "allow_package_managers": "yes"},
            "allow_package_managers must be True or False",
        ),
    ],
)
def test_a_bad_value_is_one_sentence(networking: object, said: str) -> None:
    for make in (lambda: ComputeConfig.coerce({"networking": networking}),
                 lambda: LocalManagedConfig(networking=networking)):  # fmt: skip
        with pytest.raises(ConfigError) as caught:
            make()
        assert said in str(caught.value) and "\n" not in str(caught.value)


def test_the_hosted_environment_gets_networkingconfig_as_praisonai_sends_it() -> None:
    config = ManagedConfig(
        networking=NetworkingConfig(NetworkingType.LIMITED, HOSTS, allow_package_managers=False)
    )
    assert environment_config(config, self_hosted=False)["networking"] == {
        "type": "limited", "allowed_hosts": HOSTS, "allow_mcp_servers": True, "allow_package_managers": False,
    }  # fmt: skip


def test_network_and_networking_together_are_refused() -> None:
    with pytest.raises(ConfigError, match="give network or PraisonAI's networking, not both"):
        ComputeConfig.coerce({"network": "none", "networking": {"type": "limited"}})


# ---- the allowlist reaches a provider that enforces one --------------------------------------


@pytest.fixture(scope="module")
def e2b(docker_ok: None) -> Iterator[E2BFake]:
    with serving_e2b() as server:
        yield server


def created_with(fake: E2BFake, instance_id: str) -> dict[str, Any]:
    """The create request of ``instance_id``'s sandbox, as the SDK put it on the wire."""
    [sandbox] = [s for s in fake.sandboxes.values() if s.metadata["praisonai.instance"] == instance_id]
    return sandbox.request


def test_the_allowlist_reaches_e2bs_create_request(e2b: E2BFake, home: Path) -> None:
    wanted = {"allowOut": HOSTS, "denyOut": ["0.0.0.0/0"]}
    config = PraisonAIComputeConfig(networking=LIMITED)  # PraisonAI's own ComputeConfig
    with SharedCompute("e2b", config=config) as shared:
        assert created_with(e2b, shared.ensure_provisioned())["network"] == wanted
    provider = E2BCompute()
    spelled = {"networking": NetworkingConfig(NetworkingType.LIMITED, HOSTS)}
    info = _portal.call(provider.provision, spelled)
    try:
        assert created_with(e2b, info.instance_id)["network"] == wanted
    finally:
        _portal.call(provider.shutdown, info.instance_id)


# ---- refused, before anything is made, where there is no allowlist ---------------------------

REFUSAL = (
    "cannot honour network={'allow': [...]}; remove it from the config or choose a provider that supports it"
)


def nothing_made() -> bool:
    return not list(Ledger.default().entries())


def test_local_refuses_an_allowlist_before_making_anything(home: Path) -> None:
    with pytest.raises(UnsupportedFeatureError) as caught:
        _portal.call(LocalCompute().provision, {"networking": LIMITED})
    assert str(caught.value) == f"the local provider {REFUSAL}"
    for spelled in (
        {"config": {"networking": LIMITED}},
        {"networking": NetworkingConfig(NetworkingType.LIMITED, HOSTS)},
    ):
        with pytest.raises(UnsupportedFeatureError, match="the local provider cannot honour network="):
            Sandbox.create("local", environment=False, **spelled)
    assert nothing_made() and not (home / "local").exists()


@pytest.mark.usefixtures("docker_ok")
def test_docker_refuses_a_cidr_allowlist_before_making_anything(home: Path) -> None:
    def containers() -> set[str]:
        ps = ["docker", "ps", "-aq", "--filter", "label=praisonai.provider=docker"]
        return set(subprocess.run(ps, capture_output=True, text=True, check=True).stdout.split())

    before = containers()
    shared = SharedCompute("docker", config={"networking": LIMITED})
    try:
        with pytest.raises(ConfigError) as caught:
            shared.ensure_provisioned()
    finally:
        shared.shutdown()
    said = f"network allow {HOSTS[2]!r}: the docker provider matches host names through its proxy"
    assert str(caught.value).startswith(said)
    assert nothing_made() and containers() <= before


@pytest.mark.usefixtures("docker_ok")
def test_a_managed_agent_refuses_before_the_model_is_called(home: Path) -> None:
    config = LocalManagedConfig(
        networking=NetworkingConfig(NetworkingType.LIMITED, ["10.0.0.0/8"]), environment=False
    )
    with ScriptedLLM() as llm:
        agent = ManagedAgent(compute="docker", config=config, api_key=API_KEY, base_url=f"{llm.url}/v1")
        try:
            with pytest.raises(ConfigError) as caught:
                agent.run("hi")
        finally:
            agent.close()
    assert "not CIDR blocks or ports" in str(caught.value)
    assert llm.requests == [] and nothing_made()
