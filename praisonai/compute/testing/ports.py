"""Conformance checks for ports (``ComputeProvider.expose``): a server started in the instance is
reached, from this host, through the URL ``expose`` returns; the same port gives the same URL;
a forward on this host listens on 127.0.0.1 only and stops with the instance; a bad port is
refused in one sentence.

Listed in :data:`praisonai.compute.testing.SUITES`. The server is ``python3 -m http.server``, a
background process (``processes``), bound to the instance's 127.0.0.1 on a port it picks itself
(port 0: no clash with anything else on a host the instance shares).
"""

from __future__ import annotations

import re
import socket
import urllib.error
import urllib.request
import uuid
from urllib.parse import urlsplit

import anyio
import anyio.to_thread

from praisonai._errors import ConfigError
from praisonai._types import Capability
from praisonai.compute.testing._kit import Context, Suite

suite = Suite()
PORTS, PROCESSES = Capability.PORTS, Capability.PROCESSES
_SERVING = re.compile(rb"port (\d+)")


async def serve_here(ctx: Context, instance_id: str) -> tuple[int, str]:
    """Start an HTTP server in the instance over a directory holding one unique file; return the
    server's port and the file's body (served at ``/page.txt``)."""
    folder, body = f"ports-check-{uuid.uuid4().hex[:8]}", f"served from inside {uuid.uuid4().hex}\n"
    await ctx.provider.write_file(instance_id, f"{folder}/page.txt", body)
    command = f"exec python3 -u -m http.server 0 --bind 127.0.0.1 --directory {folder}"
    proc = await ctx.provider.processes.start(instance_id, command)
    read = ctx.provider.processes.output
    with anyio.fail_after(30):
        while not (found := _SERVING.search(await read(instance_id, proc.process_id))):
            await anyio.sleep(0.1)
    return int(found.group(1)), body


async def fetch(url: str) -> str:
    """GET ``url`` from this host (retried while a forward's first connection comes up)."""

    def get() -> str:
        with urllib.request.urlopen(url, timeout=10) as answer:  # our own http URL
            return str(answer.read().decode())

    with anyio.fail_after(30):
        while True:
            try:
                return await anyio.to_thread.run_sync(get)
            except (urllib.error.URLError, ConnectionError):
                await anyio.sleep(0.2)


def listening(port: int) -> bool:
    """Whether anything on this host accepts connections on 127.0.0.1:``port``."""
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


@suite.check(PORTS, PROCESSES)
async def port_serves_the_instance(ctx: Context) -> None:
    port, body = await serve_here(ctx, ctx.instance_id)
    url = await ctx.provider.expose(ctx.instance_id, port)
    got = await fetch(f"{url.rstrip('/')}/page.txt")
    assert got == body, f"{url} must serve the instance's file, not {got!r}"
    again = await ctx.provider.expose(ctx.instance_id, port)
    assert again == url, f"a second expose of port {port} must give {url}, not {again}"
    if urlsplit(url).hostname in ("127.0.0.1", "localhost"):
        assert urlsplit(url).hostname == "127.0.0.1", f"a forward is opened by its loopback address: {url}"


@suite.check(PORTS, PROCESSES)
async def port_forward_ends_with_the_instance(ctx: Context) -> None:
    info = await ctx.provider.provision()
    try:
        port, body = await serve_here(ctx, info.instance_id)
        url = await ctx.provider.expose(info.instance_id, port)
        assert await fetch(f"{url.rstrip('/')}/page.txt") == body
        forwarder = ctx.provider.forwarder
        forwarded = forwarder is not None and forwarder.forwarding(info.instance_id, port)
    finally:
        await ctx.provider.shutdown(info.instance_id)
    local_port = urlsplit(url).port
    if forwarded and local_port is not None:  # else the URL is the instance's own port, or the vendor's
        assert not listening(local_port), f"the forward {url} still answers after the instance was shut down"
    with anyio.move_on_after(10):  # a server killed with its instance may take a moment to close
        while await _answers(f"{url.rstrip('/')}/page.txt", body):
            await anyio.sleep(0.2)
        return
    raise AssertionError(f"{url} still serves the instance's file after it was shut down")


async def _answers(url: str, body: str) -> bool:
    def get() -> bool:
        try:
            with urllib.request.urlopen(url, timeout=5) as answer:  # our own http URL
                return bool(answer.read().decode() == body)
        except (OSError, ValueError):
            return False

    return await anyio.to_thread.run_sync(get)


@suite.check()
async def expose_refuses_a_bad_port(ctx: Context) -> None:
    for bad in (0, 65536, -1):
        try:
            await ctx.provider.expose(ctx.instance_id, bad)
        except ConfigError as exc:
            assert "\n" not in str(exc) and str(bad) in str(exc), f"one sentence naming the port: {exc}"
            continue
        raise AssertionError(f"expose(port={bad}) must be refused")
