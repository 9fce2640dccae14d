"""``expose`` on Modal through the real SDK and the wire fake: a port the config declares goes
through Modal's tunnel (an HTTPS URL, nothing forwarded here), any other port through the exec
relay; ports under ``network='none'`` are refused before anything is made."""

from __future__ import annotations

import gc
import re
import ssl
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import anyio
import pytest

pytest.importorskip("modal")

from served import IMAGE

from praisonai import _portal
from praisonai._errors import ConfigError, InstanceNotFoundError
from praisonai.compute.base import ComputeProvider
from praisonai.compute.config import ComputeConfig
from praisonai.compute.providers.modal import ModalCompute
from praisonai.compute.testing import Context
from praisonai.compute.testing.ports import fetch, serve_here

PROVIDER = "modal"  # the fake and provider fixtures: tests/providers/conftest.py
DECLARED = 8000


@pytest.fixture(autouse=True)
def _collect_sdk_garbage() -> Iterator[None]:
    """The SDK's handles collected while they are ours (see the same fixture in test_modal.py)."""
    yield
    gc.collect()


@pytest.fixture
def declared(provider: ComputeProvider) -> Iterator[str]:
    """An instance whose config declares port 8000; shut down after the test."""
    info = _portal.call(provider.provision, ComputeConfig(ports=[DECLARED]))
    try:
        yield info.instance_id
    finally:
        _portal.call(provider.shutdown, info.instance_id)


def serve_on_every_address(provider: ComputeProvider, instance_id: str, port: int) -> str:
    """An HTTP server on ``port`` of every address of the instance (a tunnel comes from outside);
    the body it serves at ``/page.txt``."""
    folder, body = f"tunnel-{uuid.uuid4().hex[:8]}", f"through the tunnel {uuid.uuid4().hex}\n"
    _portal.call(provider.write_file, instance_id, f"{folder}/page.txt", body)
    command = f"exec python3 -u -m http.server {port} --bind 0.0.0.0 --directory {folder}"
    proc = _portal.call(provider.processes.start, instance_id, command)

    async def started() -> None:
        read = provider.processes.output
        with anyio.fail_after(30):
            while not re.search(rb"port \d+", await read(instance_id, proc.process_id)):
                await anyio.sleep(0.1)

    _portal.call(started)
    return body


def get_https(url: str, ca_file: str) -> str:
    """GET ``url`` trusting the fake's certificate only (Modal's is a public CA's)."""
    context = ssl.create_default_context(cafile=ca_file)
    with urllib.request.urlopen(url, timeout=10, context=context) as answer:  # the fake's https URL
        return str(answer.read().decode())


def test_a_declared_port_goes_through_the_tunnel(provider: ComputeProvider, fake: Any, declared: str) -> None:
    box = next(b for b in fake.state.boxes.values() if b.name == declared)
    specs = [(p.port, p.unencrypted) for p in box.definition.open_ports.ports]
    assert specs == [(DECLARED, False)], f"the port must be opened at creation, encrypted: {specs}"
    body = serve_on_every_address(provider, declared, DECLARED)
    fake.state.calls.clear()
    url = _portal.call(provider.expose, declared, DECLARED)
    assert urlsplit(url).scheme == "https" and fake.state.calls.get("SandboxGetTunnelsV2") == 1, url
    assert not provider.forwarder.forwarding(declared, DECLARED), "a tunnel port must not be relayed here"
    assert get_https(f"{url}/page.txt", fake.state.tls.ca_file) == body
    assert _portal.call(provider.expose, declared, DECLARED) == url, "the same port gives the same URL"


def test_an_undeclared_port_goes_through_the_relay(provider: ComputeProvider, declared: str) -> None:
    port, body = _portal.call(serve_here, Context(provider, declared), declared)  # on its 127.0.0.1
    url = _portal.call(provider.expose, declared, port)
    assert urlsplit(url).scheme == "http" and urlsplit(url).hostname == "127.0.0.1", url
    assert provider.forwarder.forwarding(declared, port), "a port Modal opened no tunnel for is relayed here"
    assert _portal.call(fetch, f"{url}/page.txt") == body


def test_another_process_finds_the_tunnel_by_tag(provider: ComputeProvider, declared: str) -> None:
    serve_on_every_address(provider, declared, DECLARED)
    url = _portal.call(provider.expose, declared, DECLARED)
    other = ModalCompute(image=IMAGE)  # knows the instance only from Modal's list and its tags
    assert _portal.call(other.expose, declared, DECLARED) == url
    assert not other.forwarder.forwarding(declared, DECLARED)


def test_the_tunnel_ends_with_the_instance(provider: ComputeProvider, fake: Any) -> None:
    info = _portal.call(provider.provision, ComputeConfig(ports=[DECLARED]))
    try:
        serve_on_every_address(provider, info.instance_id, DECLARED)
        url = _portal.call(provider.expose, info.instance_id, DECLARED)
    finally:
        _portal.call(provider.shutdown, info.instance_id)
    with pytest.raises(InstanceNotFoundError):
        _portal.call(provider.expose, info.instance_id, DECLARED)
    with pytest.raises(OSError):
        get_https(f"{url}/page.txt", fake.state.tls.ca_file)


def test_ports_without_network_are_refused_in_one_sentence(provider: ComputeProvider, fake: Any) -> None:
    before = len(fake.state.boxes)
    with pytest.raises(ConfigError) as refused:
        _portal.call(provider.provision, ComputeConfig(ports=[DECLARED], network="none"))
    assert "\n" not in str(refused.value) and "network='none'" in str(refused.value), refused.value
    assert len(fake.state.boxes) == before, "nothing may be made for a refused config"
