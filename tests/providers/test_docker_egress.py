"""Docker's egress allowlist (``network: {allow: [hosts]}``), for real: the instance on an internal
network whose only way out is the allowlist's tinyproxy. The machine has no internet, so the hosts
are two local HTTP servers on a test network the proxy is attached to (resolved there by docker's
DNS): ``allowed.test`` answers through the proxy, ``denied.test`` gets the proxy's 403, and a raw
connection from the instance to anything (the denied server's address, the bridge's gateway) fails."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kit import left_behind, network_gateway

from praisonai import _portal
from praisonai._errors import ConfigError, ProviderUnavailableError
from praisonai.compute.providers.docker import DockerCompute, _egress

pytestmark = pytest.mark.usefixtures("docker_ok")

#: Each test host serves HTTP on 80, on 443 (plain, for CONNECT) and on a high port.
HIGH_PORT = 8000
SERVER = (
    f"cd /tmp && {{ python3 -m http.server {HIGH_PORT} & python3 -m http.server 443 & }} "
    "&& exec python3 -m http.server 80"
)
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
    assert (
        _run(instance_id, tunnel + "http://allowed.test:443/").stdout == "200 200"
    )  # CONNECT, as https does
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


#: A client in the instance: sends its argument (hex) to the proxy as it is, prints the answer's
#: status line (or the error that ended it), and LISTED when a test server's listing came back.
RAW_CLIENT = """import os, socket, sys
host, port = os.environ["HTTP_PROXY"][len("http://"):].rsplit(":", 1)
got = b""
try:
    s = socket.create_connection((host, int(port)), timeout=10)
    s.sendall(bytes.fromhex(sys.argv[1]))
    while chunk := s.recv(65536):
        got += chunk
except OSError as exc:
    got += type(exc).__name__.encode()
print(got.split(b"\\r\\n")[0].decode(), "LISTED" if b"Directory listing" in got else "")
"""


def _through_proxy(instance_id: str, request: str) -> str:
    """What the proxy (or what it reached) answered the raw ``request``: see :data:`RAW_CLIENT`."""
    _portal.call(DockerCompute().write_file, instance_id, "/tmp/raw.py", RAW_CLIENT)
    return str(_run(instance_id, f"python3 /tmp/raw.py {request.encode().hex()}").stdout.strip())


#: What an instance may ask its proxy for to reach an allowed name elsewhere than 80 (plain HTTP)
#: and 443 (CONNECT): another port, spelled plainly, in capitals, behind user info (which the
#: proxy strips), with a leading zero, by CONNECT, or as a transparent proxy's Host header.
ELSEWHERE = [
    f"GET http://allowed.test:{HIGH_PORT}/ HTTP/1.0",
    f"GET HTTP://ALLOWED.TEST:{HIGH_PORT} HTTP/1.0",
    f"GET http://x@allowed.test:{HIGH_PORT}/ HTTP/1.0",
    f"GET http://allowed.test:80@allowed.test:{HIGH_PORT}/ HTTP/1.0",
    f"GET http://allowed.test:0{HIGH_PORT}/ HTTP/1.0",
    f"CONNECT allowed.test:{HIGH_PORT} HTTP/1.0\r\n\r\nGET / HTTP/1.0",
    "CONNECT allowed.test:80 HTTP/1.0\r\n\r\nGET / HTTP/1.0",
    f"GET / HTTP/1.1\r\nHost: allowed.test:{HIGH_PORT}\r\nConnection: close",
    f"GET / HTTP/1.1\r\nHost: allowed.test/:{HIGH_PORT}\r\nConnection: close",
    f"GET / HTTP/1.1\r\nHost: allowed.test/.denied.test:{HIGH_PORT}\r\nConnection: close",
]


def test_the_proxy_reaches_an_allowed_name_on_80_and_443_only(make) -> None:
    instance_id = make(network={"allow": ["allowed.test"]})
    answers = {request: _through_proxy(instance_id, request + "\r\n\r\n") for request in ELSEWHERE}
    through = {request: said for request, said in answers.items() if "LISTED" in said or " 200 " in said}
    assert through == {}, "\n".join(f"{r!r}: {s}" for r, s in through.items())
    # a host hidden behind the name in a Host header passes the filter, but is never connected
    # to: it goes to the proxy's dead upstream (a direct try says "500 Unable to connect")
    hidden = [said for request, said in answers.items() if "Host: allowed.test/" in request]
    assert all(said.startswith("HTTP/1.1 502 Unable to connect to upstream") for said in hidden), hidden


def test_the_proxy_never_serves_or_reaches_itself_and_going_around_it_fails(api, make) -> None:
    """The proxy's own address and port, its loopback, its stats page (by its URL, by CONNECT and
    as a transparent proxy's Host), and the allowed name with the proxy variables unset."""
    instance_id = make(network={"allow": ["allowed.test"]})
    proxy = _run(instance_id, "echo ${HTTP_PROXY#http://}").stdout.strip()
    itself = [
        f"GET http://{proxy}/ HTTP/1.0",
        "GET http://localhost:8888/ HTTP/1.0",
        "GET http://127.0.0.1/ HTTP/1.0",
        "GET http://tinyproxy.stats/ HTTP/1.0",
        f"CONNECT {proxy} HTTP/1.0\r\n\r\nGET / HTTP/1.0",
        f"GET / HTTP/1.1\r\nHost: {proxy}\r\nConnection: close",
        "GET / HTTP/1.0",  # no Host: the proxy's own address, as a transparent proxy reads it
    ]
    answers = {request: _through_proxy(instance_id, request + "\r\n\r\n") for request in itself}
    assert all(said.startswith(("HTTP/1.0 403", "HTTP/1.1 403")) for said in answers.values()), answers
    around = _run(instance_id, "curl -s --noproxy '*' --max-time 5 http://allowed.test/")
    assert around.exit_code != 0 and "Directory listing" not in around.stdout


@pytest.mark.parametrize("allow", ["allowed.test", "*.test"])
def test_port_80_and_connect_to_443_still_work(make, allow: str) -> None:
    instance_id = make(network={"allow": [allow]})
    for request in (
        "GET http://allowed.test/ HTTP/1.0\r\n\r\n",
        "GET http://allowed.test:80 HTTP/1.0\r\n\r\n",
    ):
        assert _through_proxy(instance_id, request).endswith("200 OK LISTED"), request
    connect = "CONNECT allowed.test:443 HTTP/1.0\r\n\r\nGET / HTTP/1.0\r\n\r\n"
    assert "LISTED" in _through_proxy(instance_id, connect)
    assert " 403 " in _through_proxy(instance_id, f"GET http://allowed.test:{HIGH_PORT}/ HTTP/1.0\r\n\r\n")


def test_an_allowlist_naming_the_hosts_address_is_refused_at_create(api, home, make) -> None:
    gateway = network_gateway(api.inspect_network("bridge")["IPAM"])
    for entry in (gateway, f"{gateway}:{HIGH_PORT}", "2130706433", "0x7f.1"):
        with pytest.raises(
            ConfigError, match=f"network allow '{re.escape(entry)}' is an IP address.*names only"
        ):
            make(network={"allow": ["allowed.test", entry]})  # removed after, should it be made
    assert left_behind(home) == []
