"""Docker's egress allowlist (``network: {allow: [hosts]}``), for real: the instance on an internal
network whose only way out is the allowlist's tinyproxy. The machine has no internet, so the hosts
are two local HTTP servers on a test network the proxy is attached to (resolved there by docker's
DNS): ``allowed.test`` answers through the proxy, ``denied.test`` gets the proxy's 403, and a raw
connection from the instance to anything (the denied server's address, the bridge's gateway) fails."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kit import network_gateway

from praisonai import _portal
from praisonai._errors import ProviderUnavailableError
from praisonai.compute.providers.docker import DockerCompute, _egress

pytestmark = pytest.mark.usefixtures("docker_ok")

SERVER = "cd /tmp && exec python3 -m http.server 80"
CONNECT = 'python3 -c "import socket,sys; socket.create_connection((sys.argv[1], 80), timeout=2)"'

UNREACHED = ("timed out", "No route to host", "Network is unreachable")


@pytest.fixture(scope="module")
def api() -> Any:
    api = DockerCompute().api
    try:
        api.inspect_image(_egress.PROXY_IMAGE)
    except Exception:
        pytest.skip(f"{_egress.PROXY_IMAGE} is not built (images/build-proxy.sh)")
    return api


@pytest.fixture(scope="module")
def hosts(api: Any) -> Iterator[dict[str, str]]:
    """``allowed.test`` and ``denied.test``: HTTP servers on a test network of their own; their IPs."""
    net = f"praisonai-egress-test-{uuid.uuid4().hex[:8]}"
    names = {alias: f"{net}-{alias.split('.')[0]}" for alias in ("allowed.test", "denied.test")}
    api.create_network(net, driver="bridge")
    try:
        found = {}
        for alias, name in names.items():
            config = api.create_networking_config({net: api.create_endpoint_config(aliases=[alias])})
            api.create_container(
                "praisonai-sandbox:latest",
                command=["sh", "-c", SERVER],
                name=name,
                host_config=api.create_host_config(network_mode=net),
                networking_config=config,
            )
            api.start(name)
            found[alias] = api.inspect_container(name)["NetworkSettings"]["Networks"][net]["IPAddress"]
        yield {"network": net, **found}
    finally:
        for name in names.values():
            _remove(api.remove_container, name, force=True)
        _remove(api.remove_network, net)


@pytest.fixture
def make(api: Any, hosts: dict[str, str]) -> Iterator[Any]:
    provider, made = DockerCompute(), []

    def provision(**config: object) -> str:
        instance_id = _portal.call(provider.provision, config).instance_id
        made.append(instance_id)
        network = config.get("network")
        if isinstance(network, dict):  # the proxy reaches the test hosts' network (our "internet")
            proxy = _egress.network_name(sorted(network["allow"]))
            if hosts["network"] not in api.inspect_container(proxy)["NetworkSettings"]["Networks"]:
                api.connect_container_to_network(proxy, hosts["network"])
        return instance_id

    yield provision
    for instance_id in made:
        _remove(_portal.call, provider.shutdown, instance_id)


def _remove(fn: Any, *args: Any, **kwargs: Any) -> None:
    with contextlib.suppress(Exception):  # already gone: the test's own cleanup, best effort
        fn(*args, **kwargs)


def _run(instance_id: str, command: str) -> Any:
    return _portal.call(DockerCompute().execute, instance_id, command)


def test_allowed_host_answers_and_denied_host_is_refused_by_the_proxy(make, hosts) -> None:
    instance_id = make(network={"allow": ["allowed.test"]})
    curl = "curl -s -o /dev/null -w '%{http_code}' --max-time 10 "
    assert _run(instance_id, curl + "http://allowed.test/").stdout == "200"
    assert _run(instance_id, curl + "http://denied.test/").stdout == "403"
    assert _run(instance_id, curl + "http://allowed.test.evil/").stdout == "403"  # anchored
    tunnel = "curl -s -o /dev/null -w '%{http_connect} %{http_code}' --max-time 10 --proxytunnel "
    assert _run(instance_id, tunnel + "http://allowed.test/").stdout == "200 200"  # CONNECT, as https does
    assert _run(instance_id, tunnel + "http://denied.test/").stdout.startswith("403")
    env = _run(instance_id, "echo $HTTPS_PROXY $NO_PROXY").stdout.split()
    assert env[0].startswith("http://") and env[1] == "localhost,127.0.0.1"


def test_raw_connections_fail(api, make, hosts) -> None:
    instance_id = make(network={"allow": ["allowed.test"]})
    internal = _egress.network_name(["allowed.test"])
    gateways = [network_gateway(api.inspect_network(n)["IPAM"]) for n in ("bridge", internal)]
    for address in (hosts["denied.test"], hosts["allowed.test"], *gateways, "192.0.2.1"):
        result = _run(instance_id, f"{CONNECT} {address}")
        assert result.exit_code != 0, address
        # dropped or unroutable, never refused: a refusal would mean the packet reached a host
        assert result.stderr.rstrip().endswith(UNREACHED), result.stderr


def test_proxy_publishes_nothing_and_goes_with_the_last_instance(api, make) -> None:
    allow = ["allowed.test", "other.test"]
    name = _egress.network_name(sorted(allow))
    first, second = make(network={"allow": allow}), make(network={"allow": list(reversed(allow))})
    proxy = api.inspect_container(name)
    assert not proxy["HostConfig"]["PortBindings"] and not proxy["NetworkSettings"]["Ports"]
    assert api.inspect_network(name)["Internal"] is True
    _portal.call(DockerCompute().shutdown, first)
    assert api.containers(all=True, filters={"name": f"^/{name}$"})  # the second still uses it
    _portal.call(DockerCompute().shutdown, second)
    assert not api.containers(all=True, filters={"name": f"^/{name}$"})
    assert not api.networks(names=[name])


def test_network_none_still_has_no_network(make) -> None:
    instance_id = make(network="none")
    out = _run(instance_id, "cat /proc/net/dev").stdout
    assert {line.split(":")[0].strip() for line in out.splitlines()[2:]} == {"lo"}


def test_concurrent_first_instances_share_one_proxy(api) -> None:
    """Two processes making the first instances of one allowlist at once: one network, one proxy."""
    allow = ["race.test"]
    name = _egress.network_name(allow)
    script = (
        "from praisonai import _portal\n"
        "from praisonai.compute.providers.docker import DockerCompute\n"
        "print(_portal.call(DockerCompute().provision, {'network': {'allow': ['race.test']}}).instance_id)"
    )
    children = [
        subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True) for _ in range(2)
    ]
    ids = [child.communicate(timeout=120)[0].strip() for child in children]
    try:
        assert all(child.returncode == 0 for child in children) and all(ids)
        assert len(api.containers(all=True, filters={"label": f"{_egress.LABEL_EGRESS}", "name": name})) == 1
        assert len(api.networks(names=[name])) == 1
    finally:
        for instance_id in filter(None, ids):
            _remove(_portal.call, DockerCompute().shutdown, instance_id)
    assert not api.networks(names=[name])


def test_a_proxy_left_by_a_vanished_instance_is_swept_by_ps(api) -> None:
    """An instance that stopped itself (idle) leaves its proxy; the next listing removes it."""
    provider = DockerCompute()
    name = _egress.network_name(["left.test"])
    instance_id = _portal.call(provider.provision, {"network": {"allow": ["left.test"]}}).instance_id
    try:
        api.remove_container(f"praisonai_{instance_id}", force=True)  # as the watchdog's self-stop does
        assert api.networks(names=[name])
        provider.listing()
        assert not api.networks(names=[name]) and not api.containers(all=True, filters={"name": name})
    finally:
        _remove(_portal.call, provider.shutdown, instance_id)


def test_a_missing_proxy_image_is_one_sentence_and_leaves_nothing(api, monkeypatch) -> None:
    monkeypatch.setattr(_egress, "PROXY_IMAGE", "praisonai-no-such-proxy:1")
    name = _egress.network_name(["missing.test"])
    try:
        with pytest.raises(ProviderUnavailableError, match=r"images/build-proxy\.sh"):
            _portal.call(DockerCompute().provision, {"network": {"allow": ["missing.test"]}})
        assert not api.networks(names=[name]) and not api.containers(all=True, filters={"name": name})
    finally:
        _egress.sweep(api)


def test_another_homes_proxy_is_its_own_and_never_swept_here(api, make, tmp_path, monkeypatch) -> None:
    """Two homes (two users, two tests) on one engine: each its own network and proxy, under its
    own lock, so one's sweep can never pull a proxy from under the other's new instance."""
    instance_id = make(network={"allow": ["shared.test"]})
    ours, our_home = _egress.network_name(["shared.test"]), os.environ["PRAISONAI_HOME"]
    monkeypatch.setenv("PRAISONAI_HOME", str(tmp_path / "other-home"))
    assert _egress.network_name(["shared.test"]) != ours
    _egress.sweep(api)  # the other home's: ours is not its to remove
    assert api.networks(names=[ours]) and api.containers(all=True, filters={"name": f"^/{ours}$"})
    monkeypatch.setenv("PRAISONAI_HOME", our_home)  # the instance is used from the home that made it
    assert _run(instance_id, "echo $HTTP_PROXY").stdout.startswith("http://")
