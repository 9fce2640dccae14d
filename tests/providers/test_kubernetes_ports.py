"""Ports on kubernetes through the API server's ``pods/portforward`` (as ``kubectl port-forward``),
against the fake API server whose pods are docker containers: a server bound to the pod's
127.0.0.1 answers, connection after connection and two at once; nothing runs in the pod for it;
a closed port ends the connection and is logged; where RBAC refuses port-forwarding, the relay
exec'd in the pod takes over."""

from __future__ import annotations

import concurrent.futures
import logging
import socket
from urllib.parse import urlsplit

import anyio
import pytest

pytest.importorskip("kubernetes", reason="the kubernetes provider needs the kubernetes extra")

from fakes.kubernetes import KubernetesFake

from praisonai import _portal
from praisonai.compute.testing import Context
from praisonai.compute.testing.ports import fetch, serve_here

PROVIDER = "kubernetes"  # the fake, provider and ctx fixtures: tests/providers/conftest.py


def _get(url: str) -> str:
    return anyio.run(fetch, url)


def _forwards(fake: KubernetesFake) -> int:
    with fake.cond:
        return sum(path.endswith("/portforward") for _, path in fake.requests)


def test_a_port_in_the_pod_is_reached_through_portforward(ctx: Context, fake: KubernetesFake) -> None:
    port, body = _portal.call(serve_here, ctx, ctx.instance_id)
    before = _forwards(fake)
    url = _portal.call(ctx.provider.expose, ctx.instance_id, port) + "/page.txt"
    assert [_get(url) for _ in range(5)] == [body] * 5
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        assert list(pool.map(_get, [url, url])) == [body, body]
    assert _forwards(fake) - before >= 7  # one port-forward per connection, no relay in the pod
    assert _portal.call(ctx.provider.expose, ctx.instance_id, port) + "/page.txt" == url


def test_a_closed_port_ends_the_connection_and_is_logged(
    ctx: Context, caplog: pytest.LogCaptureFixture
) -> None:
    url = _portal.call(ctx.provider.expose, ctx.instance_id, 1)  # nothing listens on port 1
    where = urlsplit(url)
    with (
        caplog.at_level(logging.WARNING, logger="praisonai.kubernetes"),
        socket.create_connection((where.hostname, where.port), timeout=30) as conn,
    ):
        conn.sendall(b"GET / HTTP/1.0\r\n\r\n")
        assert conn.recv(100) == b""  # ended, with nothing from a port that is not there
    assert any("port-forward to port 1: error forwarding port 1" in r.getMessage() for r in caplog.records)


def test_where_portforward_is_forbidden_the_exec_relay_serves(ctx: Context, fake: KubernetesFake) -> None:
    fake.port_forwarding = False
    try:
        port, body = _portal.call(serve_here, ctx, ctx.instance_id)
        provider = type(ctx.provider)(**ctx.provider.options.settings())  # a new one: no forwarder yet
        before = len(fake.exec_log)
        assert _get(_portal.call(provider.expose, ctx.instance_id, port) + "/page.txt") == body
        assert len(fake.exec_log) > before  # relayed through an exec stream
        provider.forwarder.stop(ctx.instance_id)
    finally:
        fake.port_forwarding = True
