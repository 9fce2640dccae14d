"""The Modal fake's tunnels: the ports a ``SandboxCreateV2`` declares (``definition.open_ports``)
get a listener each on 127.0.0.1 that forwards every connection to the port on the container's own
address, as Modal's edge reaches a sandbox from outside it (a server on the container's 127.0.0.1
is not reached, as on Modal). An encrypted port's listener ends TLS with a certificate for
127.0.0.1 that the fake makes once (:attr:`Tls.ca_file`: what a client trusts); an unencrypted one
also has a plain listener (``unencrypted_host``/``unencrypted_port``). ``SandboxGetTunnelsV2``
answers them; they stop with the sandbox. Not modelled: Modal's ``*.modal.host`` names, port 443,
the delay before tunnels are ready, H2 tunnels (``tunnel_type``)."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import ssl
import subprocess
import tempfile
from functools import partial
from pathlib import Path
from typing import Any

from modal_proto import api_pb2

from fakes import docker
from fakes.modal._boxes import Box

_CHUNK = 65536


class Tls:
    """The fake's certificate for 127.0.0.1 (self-signed, made on first use, removed by ``remove``)."""

    def __init__(self) -> None:
        self._dir: Path | None = None
        self._context: ssl.SSLContext | None = None

    @property
    def ca_file(self) -> str:
        """The certificate a client passes as ``cafile`` to trust the fake's tunnels."""
        self.context()
        assert self._dir is not None
        return str(self._dir / "cert.pem")

    def context(self) -> ssl.SSLContext:
        if self._context is None:
            self._dir = Path(tempfile.mkdtemp(prefix="praisonai-modal-fake-tls-"))
            cert, key = self._dir / "cert.pem", self._dir / "key.pem"
            made = subprocess.run(
                ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                 "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                 "-keyout", str(key), "-out", str(cert)],
                capture_output=True, check=False,
            )  # fmt: skip
            if made.returncode:
                raise RuntimeError(f"openssl made no certificate: {made.stderr.decode(errors='replace')}")
            self._context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self._context.load_cert_chain(cert, key)
        return self._context

    def remove(self) -> None:
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)


async def open_tunnels(box: Box, specs: Any, tls: Tls) -> None:
    """Start a listener per declared port of ``box`` and record its ``TunnelData``."""
    rc, out, err = await docker.docker_async(
        "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", box.container
    )
    if rc:
        raise RuntimeError(err.decode(errors="replace").strip())
    address = out.decode().strip()
    for spec in specs:
        forward = partial(_forward, address, spec.port)
        secure = await asyncio.start_server(forward, "127.0.0.1", 0, ssl=tls.context())
        box.listeners.append(secure)
        tunnel = api_pb2.TunnelData(host="127.0.0.1", port=_port(secure), container_port=spec.port)
        if spec.unencrypted:
            plain = await asyncio.start_server(forward, "127.0.0.1", 0)
            box.listeners.append(plain)
            tunnel.unencrypted_host, tunnel.unencrypted_port = "127.0.0.1", _port(plain)
        box.tunnels.append(tunnel)


def close_tunnels(box: Box) -> None:
    """Stop ``box``'s listeners: nothing answers on its tunnels afterwards."""
    for listener in box.listeners:
        listener.close()
    box.listeners.clear()


def _port(server: asyncio.Server) -> int:
    return int(server.sockets[0].getsockname()[1])


async def _forward(
    address: str, port: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    try:
        up_reader, up_writer = await asyncio.open_connection(address, port)
    except OSError:  # nothing listens there: the client sees the connection close, as on Modal
        writer.close()
        return
    await asyncio.gather(_copy(reader, up_writer), _copy(up_reader, writer))


async def _copy(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError, ssl.SSLError):
        while data := await source.read(_CHUNK):
            sink.write(data)
            await sink.drain()
    sink.close()  # either side ending ends the connection
