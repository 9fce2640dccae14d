"""Ports for real (``expose``, ``Sandbox.expose``, ``praisonai compute port``) on docker, local and
ssh: where the forward listens, what it leaves behind, and what is refused. The conformance suite
(praisonai/compute/testing/ports.py) checks the URL serves the instance's file on every provider."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from kit import Instance, provider_named

import praisonai
from praisonai import Sandbox, _portal
from praisonai._errors import ConfigError, UnsupportedFeatureError
from praisonai.compute.testing import Context
from praisonai.compute.testing.fake import FakeProvider
from praisonai.compute.testing.ports import fetch, listening, serve_here

_REPO = Path(praisonai.__file__).parents[1]


def listeners(port: int) -> set[str]:
    """The local addresses (hex, as the kernel lists them) listening on TCP ``port`` here."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.rsplit(":", 1)
            if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                found.add(address)
    return found


def served(instance: Instance) -> tuple[int, str, str]:
    """Serve a file in the instance and expose it: (instance port, body, URL)."""
    provider, instance_id = instance
    ctx = Context(provider, instance_id)
    port, body = _portal.call(serve_here, ctx, instance_id)
    return port, body, _portal.call(provider.expose, instance_id, port)


def get(url: str) -> str:
    return _portal.call(fetch, f"{url}/page.txt")


@pytest.mark.parametrize("kind", ["docker", "ssh"])
def test_a_forward_listens_on_loopback_only_and_leaves_nothing(
    kind: str, request: pytest.FixtureRequest, make: Callable[..., Instance]
) -> None:
    provider = provider_named(kind, request)
    instance = make(provider)
    _, body, url = served(instance)
    forwarded = urlsplit(url).port
    assert forwarded is not None and listeners(forwarded) == {"0100007F"}, "127.0.0.1 and nothing else"
    assert [get(url) for _ in range(3)] == [body] * 3, "each connection is relayed afresh"
    _portal.call(provider.shutdown, instance[1])
    assert not listening(forwarded) and not listeners(forwarded)


def test_docker_relays_under_network_none_and_leaves_no_relay_running(
    request: pytest.FixtureRequest, make: Callable[..., Instance]
) -> None:
    provider = provider_named("docker", request)
    instance = make(provider, network="none")
    _, body, url = served(instance)
    assert get(url) == body, "the relay runs through the engine, not a network"
    # the relay ends when the server closes (just after the client read its answer): allow that moment
    relay = "^python3 -I -S -c"
    count = f"for _ in $(seq 50); do ps -eo args | grep -q '{relay}' || exit 0; sleep 0.1; done; exit 1"
    relays = _portal.call(provider.execute, instance[1], count)
    assert relays.exit_code == 0, "a relay outlived its connection"


def test_a_closed_handle_takes_its_forward_along(request: pytest.FixtureRequest) -> None:
    provider = provider_named("docker", request)
    with Sandbox.create(provider) as owner:
        port, body = _portal.call(serve_here, Context(provider, owner.id), owner.id)
        url = owner.expose(port)
        assert owner.expose(port) == url and get(url) == body
        attached = Sandbox.connect(owner.id, "docker")  # a provider object of its own
        other = attached.expose(port)
        assert other != url and get(other) == body
        attached.close()  # not the owner: the instance stays, this handle's forwards go
        assert not listening(urlsplit(other).port or 0) and get(url) == body
    assert not listening(urlsplit(url).port or 0)


def test_an_instance_without_python3_is_refused_in_one_sentence(
    request: pytest.FixtureRequest, make: Callable[..., Instance]
) -> None:
    provider = provider_named("docker", request)
    provider_id = make(provider, env={"PATH": "/nonexistent"})[1]
    with pytest.raises(UnsupportedFeatureError, match="no python3") as refused:
        _portal.call(provider.expose, provider_id, 8000)
    assert "\n" not in str(refused.value)
    assert not provider.forwarder.forwarding(provider_id, 8000)


def test_local_gives_the_port_itself_and_refuses_without_network(
    request: pytest.FixtureRequest, make: Callable[..., Instance]
) -> None:
    local = provider_named("local", request)
    port, body, url = served(make(local))
    assert url == f"http://127.0.0.1:{port}" and get(url) == body
    isolated = provider_named("local-bwrap", request)
    instance_id = make(isolated, network="none")[1]
    with pytest.raises(UnsupportedFeatureError, match="network: none") as refused:
        _portal.call(isolated.expose, instance_id, 8000)
    assert "\n" not in str(refused.value)


def test_a_provider_without_ports_and_a_bad_port_are_one_sentence() -> None:
    provider = FakeProvider()
    instance_id = _portal.call(provider.provision).instance_id
    try:
        with pytest.raises(UnsupportedFeatureError, match="'ports' capability"):
            _portal.call(provider.expose, instance_id, 8000)
        with pytest.raises(ConfigError, match="not a TCP port"):
            _portal.call(provider.expose, instance_id, True)  # type: ignore[arg-type]
    finally:
        _portal.call(provider.shutdown, instance_id)


def test_cli_port_forwards_until_interrupted(
    request: pytest.FixtureRequest, home: Path, make: Callable[..., Instance]
) -> None:
    provider = provider_named("docker", request)
    instance = make(provider)
    port, body, _ = served(instance)
    provider.forwarder.stop(instance[1])  # the command's own forward is the one under test
    command = [sys.executable, "-c", "from praisonai.cli import main; main()", "compute", "port"]
    child = subprocess.Popen(
        [*command, instance[1], str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=_REPO,
    )
    try:
        assert child.stdout is not None
        url = child.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and get(url) == body
    finally:
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=30)
    assert child.returncode == 0, err
    assert "Ctrl-C" in err and not listening(urlsplit(url).port or 0)


def test_cli_port_of_an_unknown_instance_is_one_line(home: Path) -> None:
    command = [sys.executable, "-c", "from praisonai.cli import main; main()", "compute", "port"]
    r = subprocess.run(
        [*command, "docker_0123456789ab", "80"], capture_output=True, text=True, timeout=60, cwd=_REPO
    )
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "no instance" in r.stderr, r.stderr


def test_a_docker_pool_forwards_through_its_engine(request: pytest.FixtureRequest) -> None:
    request.getfixturevalue("docker_ok")
    from praisonai.compute.providers.docker import DockerCompute

    engine = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    pool = DockerCompute(hosts=[engine])  # a pool of one: the pool's code path
    instance_id = _portal.call(pool.provision).instance_id
    try:
        _, body, url = served((pool, instance_id))
        assert get(url) == body and listeners(urlsplit(url).port or 0) == {"0100007F"}
    finally:
        _portal.call(pool.shutdown, instance_id)
        pool.close()
    assert not listening(urlsplit(url).port or 0)


def test_large_bodies_and_concurrent_connections_arrive_intact(
    request: pytest.FixtureRequest, make: Callable[..., Instance]
) -> None:
    import concurrent.futures
    import hashlib

    provider = provider_named("docker", request)
    provider_id = make(provider)[1]
    _portal.call(provider.execute, provider_id, "mkdir -p big && head -c 8388608 /dev/urandom > big/blob")
    digest = _portal.call(provider.execute, provider_id, "sha256sum big/blob").stdout.split()[0]
    server = "exec python3 -m http.server 8000 --bind 127.0.0.1 --directory big"  # reached by the relay
    _portal.call(provider.processes.start, provider_id, server)
    url = _portal.call(provider.expose, provider_id, 8000)
    _portal.call(fetch, url)  # waits until the server answers

    def blob(_: int) -> str:
        import urllib.request

        with urllib.request.urlopen(f"{url}/blob", timeout=60) as answer:
            return hashlib.sha256(answer.read()).hexdigest()

    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        assert list(pool.map(blob, range(6))) == [digest] * 6


def test_docker_connects_straight_to_a_server_on_every_address(
    request: pytest.FixtureRequest, make: Callable[..., Instance], monkeypatch: pytest.MonkeyPatch
) -> None:
    from praisonai.compute.providers.docker import _ports

    def no_relay(*args: object) -> None:
        raise AssertionError("a server on the container's every address is reached without the relay")

    monkeypatch.setattr(_ports, "relay", no_relay)
    provider = provider_named("docker", request)
    provider_id = make(provider)[1]
    _portal.call(provider.write_file, provider_id, "direct/page.txt", "straight\n")
    _portal.call(provider.processes.start, provider_id, "exec python3 -m http.server 8000 --directory direct")
    url = _portal.call(provider.expose, provider_id, 8000)
    assert get(url) == "straight\n"


def test_an_ssh_host_that_forbids_forwarding_is_refused_in_one_sentence() -> None:
    paramiko = pytest.importorskip("paramiko")
    from praisonai.compute.providers.ssh import _ports
    from praisonai.compute.providers.ssh._connect import SSHHost

    class Refusing:  # sshd's answer to a direct-tcpip channel under AllowTcpForwarding no
        def open_channel(self, *args: object, **kwargs: object) -> None:
            raise paramiko.ChannelException(1, "Administratively prohibited")

    class Link:
        host = SSHHost.parse("ci@build1.internal")

        def transports(self) -> list[Refusing]:
            return [Refusing()]

    with pytest.raises(UnsupportedFeatureError, match="AllowTcpForwarding") as refused:
        _ports.check_allowed(Link(), 8000)  # type: ignore[arg-type]
    assert "\n" not in str(refused.value)
