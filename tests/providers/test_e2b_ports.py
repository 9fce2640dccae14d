"""Ports on E2B through the real ``e2b`` SDK against its wire fake: ``expose`` gives E2B's own
preview URL (``https://{port}-{sandbox_id}.{domain}``, from ``sandbox.get_host``), served by the
fake's edge over TLS (``fakes.e2b._edge``) from the port inside the sandbox's container; no
forwarder runs here; a closed port and a gone sandbox get the edge's 502 answers."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

pytest.importorskip("e2b")

from fakes.e2b import E2BFake
from fakes.e2b._edge import NOT_FOUND, PORT_NOT_OPEN
from kit import wait_until

import praisonai
from praisonai import _portal
from praisonai.compute.providers.e2b import E2BCompute

pytestmark = pytest.mark.usefixtures("docker_ok")

PROVIDER = "e2b"  # the fake fixture: tests/providers/conftest.py
PORT = 8000


@pytest.fixture
def running(fake: E2BFake, home: Path) -> Iterator[tuple[E2BCompute, str, str]]:
    """A provider, an instance and its sandbox id; the instance is shut down afterwards."""
    p = E2BCompute()
    iid = _portal.call(p.provision).instance_id
    try:
        sandbox_id = next(
            s.sandbox_id for s in fake.sandboxes.values() if s.metadata["praisonai.instance"] == iid
        )
        yield p, iid, sandbox_id
    finally:
        _portal.call(p.shutdown, iid)


def _client(fake: E2BFake) -> httpx.Client:
    assert fake.edge is not None
    return httpx.Client(verify=fake.edge.client_context(), timeout=10)  # the edge's CA, names checked


def _serve(p: E2BCompute, iid: str, body: str) -> None:
    """An HTTP server on the sandbox's 127.0.0.1:PORT, listening once this returns (so the edge
    is never asked while it starts: a loaded machine takes its time)."""
    _portal.call(p.write_file, iid, "site/page.txt", body)
    _portal.call(
        p.processes.start, iid, f"exec python3 -m http.server {PORT} --bind 127.0.0.1 --directory site"
    )
    probe = f"python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {PORT}))'"
    wait_until(lambda: _portal.call(p.execute, iid, probe).exit_code == 0, 30)


def test_expose_gives_e2bs_https_preview_url_that_serves_the_port(
    fake: E2BFake, running: tuple[E2BCompute, str, str]
) -> None:
    p, iid, sandbox_id = running
    _serve(p, iid, "from inside the sandbox\n")
    url = _portal.call(p.expose, iid, PORT)
    assert fake.edge is not None
    assert url == f"https://{PORT}-{sandbox_id}.{fake.edge.domain}"
    with _client(fake) as client:
        wait_until(lambda: client.get(f"{url}/page.txt").status_code == 200, 30)
        assert client.get(f"{url}/page.txt").text == "from inside the sandbox\n"
    assert _portal.call(p.expose, iid, PORT) == url  # derived, not allocated: the same again
    assert _portal.call(E2BCompute().expose, iid, PORT) == url  # from another process's view too
    assert not p.forwarder.forwarding(iid, PORT)  # nothing of this process serves it: `compute port` ends


def test_binary_bodies_arrive_intact(fake: E2BFake, running: tuple[E2BCompute, str, str]) -> None:
    p, iid, _ = running
    blob = os.urandom(1024 * 1024)  # not UTF-8: the old relay through envd's text stream broke it
    _portal.call(p.write_file, iid, "site/blob.bin", blob)
    _serve(p, iid, "ready\n")
    url = _portal.call(p.expose, iid, PORT)
    with _client(fake) as client:
        wait_until(lambda: client.get(f"{url}/page.txt").status_code == 200, 30)
        assert client.get(f"{url}/blob.bin").content == blob


def test_closed_port_gets_the_edges_502(fake: E2BFake, running: tuple[E2BCompute, str, str]) -> None:
    p, iid, sandbox_id = running
    url = _portal.call(p.expose, iid, 9)  # nothing listens on the discard port
    with _client(fake) as client:
        answer = client.get(url)
    assert answer.status_code == 502
    assert answer.json() == {"message": PORT_NOT_OPEN, "sandboxId": sandbox_id, "port": 9}


def test_a_shut_down_sandboxs_url_gets_the_edges_not_found(fake: E2BFake) -> None:
    p = E2BCompute()
    iid = _portal.call(p.provision).instance_id
    try:
        url = _portal.call(p.expose, iid, PORT)
    finally:
        _portal.call(p.shutdown, iid)
    with _client(fake) as client:
        answer = client.get(url)
    assert answer.status_code == 502 and answer.json()["message"] == NOT_FOUND


def test_cli_port_prints_the_preview_url_and_ends(
    fake: E2BFake, running: tuple[E2BCompute, str, str]
) -> None:
    p, iid, _ = running
    command = [
        sys.executable,
        "-c",
        "from praisonai.cli import main; main()",
        "compute",
        "port",
        iid,
        str(PORT),
    ]
    cwd = Path(praisonai.__file__).parents[1]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=cwd)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == _portal.call(p.expose, iid, PORT)  # nothing to keep open here
    assert "Ctrl-C" not in done.stderr


def test_in_the_sdks_debug_mode_the_url_is_plain_http_on_localhost(
    running: tuple[E2BCompute, str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("E2B_DEBUG", "true")  # the SDK's local-development mode, read at connect
    _, iid, _ = running
    assert _portal.call(E2BCompute().expose, iid, PORT) == f"http://localhost:{PORT}"
