"""Kubernetes' allowlists of host names, for real against the API-server fake: the instance's
NetworkPolicy lets it reach DNS and its allowlist's tinyproxy pod only (the fake enforces that as
a CNI would: the pod is on an internal docker network shared with the proxy pod alone), and the
proxy, behind a Service whose name the instance resolves, forwards to the listed hosts only. The
machine has no internet, so the hosts are two local HTTP servers on a test network the proxy pod's
container is attached to (resolved there by docker's DNS), as in ``test_docker_egress``."""

from __future__ import annotations

import contextlib
import re
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

pytest.importorskip("kubernetes")

from fakes import docker
from fakes.kubernetes import KubernetesFake

from praisonai import _portal
from praisonai._errors import ConfigError, ProviderUnavailableError
from praisonai.compute.config import ComputeConfig
from praisonai.compute.egress import PROXY_IMAGE, PROXY_PORT, proxy_name
from praisonai.compute.providers.kubernetes import KubernetesCompute, _egress

PROVIDER = "kubernetes"  # the fake and provider fixtures: tests/providers/conftest.py
NS = "sbx"
SERVER = "cd /tmp && { python3 -m http.server 443 & } && exec python3 -m http.server 80"  # 443 for CONNECT
CONNECT = 'python3 -c "import socket,sys; socket.create_connection((sys.argv[1], 80), timeout=2)"'
UNREACHED = ("timed out", "No route to host", "Network is unreachable")
CURL = "curl -s -o /dev/null -w '%{http_code}' --max-time 10 "


@pytest.fixture(scope="module")
def hosts() -> Iterator[dict[str, str]]:
    """``allowed.test`` and ``denied.test``: HTTP servers on a test network of their own; their IPs."""
    if docker.docker("image", "inspect", PROXY_IMAGE).returncode != 0:
        pytest.skip(f"{PROXY_IMAGE} is not built (images/build-proxy.sh)")
    net = f"praisonai-k8s-egress-test-{uuid.uuid4().hex[:8]}"
    names = {alias: f"{net}-{alias.split('.')[0]}" for alias in ("allowed.test", "denied.test")}
    docker.docker("network", "create", net)
    try:
        found = {}
        for alias, name in names.items():
            argv = ["--name", name, "--network", net, "--network-alias", alias]
            docker.run_detached(argv, [docker.IMAGE, "sh", "-c", SERVER], {})
            shown = docker.docker(
                "inspect", "-f", f'{{{{(index .NetworkSettings.Networks "{net}").IPAddress}}}}', name
            )
            found[alias] = shown.stdout.decode().strip()
        yield {"network": net, **found}
    finally:
        docker.remove(*names.values())
        docker.docker("network", "rm", net)


@pytest.fixture
def make(provider: KubernetesCompute, fake: KubernetesFake, hosts: dict[str, str]) -> Iterator[Any]:
    """Provision an instance (shut down after the test), its proxy pod joined to the hosts' network."""
    made: list[str] = []

    def provision(**config: object) -> str:
        instance_id = _portal.call(provider.provision, {"auto_shutdown": False, **config}).instance_id
        made.append(instance_id)
        network = config.get("network")
        if isinstance(network, dict):  # the proxy reaches the test hosts' network (our "internet")
            name = proxy_name(_egress.hosts_of(ComputeConfig(network=network)))  # its host names only
            proxy = fake.pods[(NS, name)]["_container"]
            docker.docker("network", "connect", hosts["network"], proxy)
        return instance_id

    provision.hosts_network = hosts["network"]  # type: ignore[attr-defined]
    yield provision
    for instance_id in made:
        with contextlib.suppress(Exception):  # already gone: the test's own shutdown
            _portal.call(provider.shutdown, instance_id)
    assert not _proxies(fake), "a proxy outlived its last instance"


def _proxies(fake: KubernetesFake) -> list[str]:
    kinds = (fake.pods, fake.services, fake.policies)
    return [name for store in kinds for (ns, name) in store if name.startswith("praisonai-egress-")]


def _run(provider: KubernetesCompute, instance_id: str, command: str) -> Any:
    return _portal.call(provider.execute, instance_id, command)


def test_allowed_host_answers_and_denied_host_is_refused_by_the_proxy(provider, make) -> None:
    instance_id = make(network={"allow": ["allowed.test"]})
    assert _run(provider, instance_id, CURL + "http://allowed.test/").stdout == "200"
    assert _run(provider, instance_id, CURL + "http://denied.test/").stdout == "403"
    assert _run(provider, instance_id, CURL + "http://allowed.test.evil/").stdout == "403"  # anchored
    tunnel = "curl -s -o /dev/null -w '%{http_connect} %{http_code}' --max-time 10 --proxytunnel "
    assert (
        _run(provider, instance_id, tunnel + "http://allowed.test:443/").stdout == "200 200"
    )  # as https does
    assert _run(provider, instance_id, tunnel + "http://allowed.test/").stdout.startswith("403")  # 443 only
    assert _run(provider, instance_id, tunnel + "http://denied.test/").stdout.startswith("403")
    env = _run(provider, instance_id, "echo $HTTPS_PROXY $http_proxy $NO_PROXY").stdout.split()
    url = f"http://{proxy_name(['allowed.test'])}:{PROXY_PORT}"
    assert env == [url, url, "localhost,127.0.0.1"]


def test_raw_connections_fail(provider, make, hosts) -> None:
    instance_id = make(network={"allow": ["allowed.test"]})
    for address in (hosts["denied.test"], hosts["allowed.test"], "192.0.2.1"):
        result = _run(provider, instance_id, f"{CONNECT} {address}")
        assert result.exit_code != 0, address
        # dropped or unroutable, never refused: a refusal would mean the packet reached a host
        assert result.stderr.rstrip().endswith(UNREACHED), result.stderr


def test_the_policies_and_the_proxy_go_with_the_last_instance(provider, fake, make) -> None:
    allow = ["allowed.test", "other.test"]
    name = proxy_name(allow)
    first, second = make(network={"allow": allow}), make(network={"allow": [*reversed(allow), "10.9.0.0/16"]})
    policy = fake.policies[(NS, second.replace("_", "-").lower())]["spec"]
    assert {"ipBlock": {"cidr": "10.9.0.0/16"}} in [
        p for rule in policy["egress"] for p in rule.get("to", [])
    ]
    assert {"podSelector": {"matchLabels": {_egress.LABEL_PROXY: name}}} in policy["egress"][-1]["to"]
    ingress = fake.policies[(NS, name)]["spec"]["ingress"]
    assert ingress == [
        {
            "from": [{"podSelector": {"matchLabels": {_egress.LABEL_CLIENT: name}}}],
            "ports": [{"protocol": "TCP", "port": PROXY_PORT}],
        }
    ]
    assert fake.services[(NS, name)]["spec"]["selector"] == {_egress.LABEL_PROXY: name}
    container = fake.pods[(NS, name)]["_container"]
    _portal.call(provider.shutdown, first)
    assert (NS, name) in fake.pods  # the second still uses it
    _portal.call(provider.shutdown, second)
    assert not _proxies(fake)
    assert docker.docker("inspect", container).returncode != 0  # its container went too


def test_network_none_still_reaches_nothing(provider, make) -> None:
    instance_id = make(network="none")
    out = _run(provider, instance_id, "cat /proc/net/dev").stdout
    assert {line.split(":")[0].strip() for line in out.splitlines()[2:]} == {"lo"}


def test_a_port_in_an_allowlist_is_one_sentence(provider) -> None:
    with pytest.raises(ConfigError, match="not ports"):
        _portal.call(provider.provision, {"network": {"allow": ["pypi.org:443"]}})


@pytest.mark.parametrize("entry", ["2130706433", "0x7f.1", "127.1", "[::1]", "10.0.0.1:80"])
def test_an_address_in_another_spelling_is_refused_names_only(provider, entry: str) -> None:
    """An IP block goes to the NetworkPolicy in its usual form; any other spelling of an address
    would reach the proxy as a name its resolver reads as that address: refused."""
    with pytest.raises(ConfigError, match=f"'{re.escape(entry)}' is an IP address.*names only"):
        _portal.call(provider.provision, {"network": {"allow": ["pypi.org", entry]}})
    assert _egress.hosts_of(
        ComputeConfig(network={"allow": ["10.0.0.0/8", "10.1.2.3", "::1", "pypi.org"]})
    ) == ["pypi.org"]


def test_a_missing_proxy_image_is_one_sentence_and_leaves_nothing(fake, provider) -> None:
    other = KubernetesCompute(
        kubeconfig=provider.options.kubeconfig,
        image=provider.options.image,
        egress_image="praisonai-no-such-proxy:1",
    )
    before = {i.instance_id for i in _portal.call(provider.list_instances)}
    with pytest.raises(ProviderUnavailableError, match=r"images/build-proxy\.sh"):
        _portal.call(other.provision, {"network": {"allow": ["missing.test"]}, "auto_shutdown": False})
    assert {i.instance_id for i in _portal.call(provider.list_instances)} == before
    assert not _proxies(fake)


def test_concurrent_first_instances_share_one_proxy(provider, fake, make) -> None:
    """Two clients (no shared state: as two hosts) making the first instances of one allowlist at
    once: one proxy, taken by the second on its creates' 409s, both instances served by it."""
    allow = {"allow": ["allowed.test", "race.test"]}
    others = [
        KubernetesCompute(kubeconfig=provider.options.kubeconfig, image=provider.options.image)
        for _ in range(2)
    ]
    with ThreadPoolExecutor(2) as pool:
        started = [
            pool.submit(_portal.call, p.provision, {"network": allow, "auto_shutdown": False}) for p in others
        ]
    ids = [f.result().instance_id for f in started if f.exception() is None]
    try:
        assert len(ids) == 2, [f.exception() for f in started]
        name = proxy_name(sorted(allow["allow"]))
        assert [n for (_, n) in fake.pods if n.startswith("praisonai-egress-")] == [name]
        docker.docker("network", "connect", make.hosts_network, fake.pods[(NS, name)]["_container"])
        for instance_id in ids:
            assert _run(provider, instance_id, CURL + "http://allowed.test/").stdout == "200"
    finally:
        for instance_id in ids:
            _portal.call(provider.shutdown, instance_id)


def test_a_sweep_that_raced_a_new_instance_makes_its_proxy_again(provider, fake, make, monkeypatch) -> None:
    """A sweep whose first look came before an instance's pod existed removes the proxy; its second
    look finds the instance and makes the proxy again, so the instance keeps its way out."""
    instance_id = make(network={"allow": ["allowed.test"]})
    name, looks = proxy_name(["allowed.test"]), []
    real = provider.egress.clients

    async def first_look_misses(proxy: str, op: str) -> list[str]:
        looks.append(proxy)
        return [] if len(looks) == 1 else await real(proxy, op)

    monkeypatch.setattr(provider.egress, "clients", first_look_misses)
    before = fake.pods[(NS, name)]["metadata"]["uid"]
    _portal.call(provider.egress.sweep, "shutdown")
    assert looks == [name, name]
    assert fake.pods[(NS, name)]["metadata"]["uid"] != before  # removed, then made again
    assert (NS, name) in fake.services and (NS, name) in fake.policies
    monkeypatch.undo()
    _portal.call(provider.egress.until_ready, name)
    docker.docker("network", "connect", make.hosts_network, fake.pods[(NS, name)]["_container"])
    assert _run(provider, instance_id, CURL + "http://allowed.test/").stdout == "200"


def test_a_paused_instance_lets_its_proxy_go_and_gets_it_back_on_resume(provider, fake, make) -> None:
    allow = {"allow": ["allowed.test"]}
    instance_id, name = make(network=allow, idle_action="pause"), proxy_name(["allowed.test"])
    _portal.call(provider.pause, instance_id)
    assert not _proxies(fake), "its only instance is paused: the proxy goes"
    _portal.call(provider.resume, instance_id)  # ready with its proxy before it returns
    docker.docker("network", "connect", make.hosts_network, fake.pods[(NS, name)]["_container"])
    assert _run(provider, instance_id, CURL + "http://allowed.test/").stdout == "200"
    assert _run(provider, instance_id, CURL + "http://denied.test/").stdout == "403"
