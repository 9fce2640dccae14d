"""A loopback fake of Modal's gRPC API that the real ``modal`` SDK (1.6.4) talks to.

Point the SDK at it with ``MODAL_SERVER_URL=http://127.0.0.1:<port>`` (any ``MODAL_TOKEN_ID`` /
``MODAL_TOKEN_SECRET``): :meth:`ModalFake.env` gives the variables. The SDK's own code runs — its
``Sandbox`` V2 backend, the task command router client, its retries and exception mapping — and
every sandbox is a real local docker container (labelled ``praisonai.test.modal-fake=<fake>``), so exit
codes, stdout/stderr, timeouts and files are real.

Modelled, as the SDK's source shows them (``modal/sandbox/_impl_v2.py``,
``_task_command_router_client.py``, ``_filesystem.py``):
- control plane: ``AppGetOrCreate``, ``AuthTokenGet`` (an unsigned JWT with ``exp``),
  ``ImageGetOrCreate`` (only ``Image.from_registry(tag)`` of a local image: the fake builds none),
  ``SandboxCreateV2`` (name unique per app -> ``AlreadyExistsError``; ``block_network`` -> docker
  ``--network none``), ``SandboxWaitV2`` / ``poll`` (124 after ``timeout``, 137 after terminate or
  idle), ``SandboxTerminateV2`` (a no-op when finished), ``SandboxListV2`` (running only, tag
  superset), tags get/set, ``SandboxGetTaskIdV2``, ``SandboxGetCommandRouterAccess``.
- lifetime: ``timeout`` is an absolute deadline; ``idle_timeout`` counts from the last exec
  activity and a running exec keeps the sandbox alive.
- command router (plain http on the same port, which the SDK allows for a localhost server):
  exec start/stdio read from offset/stdin write (unary and streaming)/stdin status/wait/poll; the
  64 KiB argument cap; ``timeout_secs`` kills the command's whole process group (the SDK's client
  deadline then makes ``wait()`` return -1); a finished sandbox answers NOT_FOUND.
- a long-lived exec as a byte stream (the provider's helper channel): stdin written piecewise by
  offset while stdout/stderr stream back on held reads, a wait held open beside them; a write to
  an exec whose process has exited fails FAILED_PRECONDITION. One difference: the exit status is
  known once the exec's output has closed (a ``docker exec`` ends then), where Modal's worker
  knows it when the process exits, so a process whose children still hold its pipes looks
  alive here until they close them.
- ``pty_info`` on an exec (``sb.exec(pty=True)``, ``_pty``): the command on a real
  pseudo-terminal in the container (a ``docker exec`` with a tty) of the size asked for, its
  output on the exec's stdout, stdin typed into it, over the same exec RPCs; no resize (Modal has
  no call for it either).
- every call is counted by method name in ``state.calls``: what a call costs on a real network is
  a round trip, and the tests and the benchmark count them.
- ``sb.filesystem``: the SDK execs ``/__modal/.bin/modal-sandbox-fs-tools``; the fake installs a
  Python stand-in there (ReadFile, WriteFile, MakeDirectory, Remove) with the same error payloads.

- tunnels (``_tunnels``): ``open_ports`` of ``SandboxCreateV2`` and ``SandboxGetTunnelsV2``; a
  listener on 127.0.0.1 per port forwards to the container's address, TLS for an encrypted port
  (``state.tls.ca_file`` is the certificate to trust).
- ``snapshot_filesystem``: ``docker commit`` of the sandbox (``ImageFromId`` finds it; the fake
  removes the images when it stops); no ttl expiry. ``ImageDelete``
  (``modal.experimental.image_delete``): NOT_FOUND for an unknown id; a deleted image starts no
  sandbox, the ones running from it run on.
- named ``Dict``s (``_dicts``): get-or-create, update, get, contains, pop, contents; kept in the
  fake's memory for its lifetime (what the provider keeps its paused instances' records in).

Not modelled (each answers UNIMPLEMENTED naming the method): image builds,
``snapshot_directory`` / ``mount_image``, memory snapshots, ``Sandbox.from_name``, sidecars,
outbound domain/CIDR allowlists (accepted and recorded on the sandbox, not enforced), secrets,
volumes, the V1 backend (gpu=), rate limits and quotas.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Any

from grpclib.server import Server

from fakes import docker
from fakes.modal._boxes import LABEL, SNAPSHOT_REPOSITORY
from fakes.modal._server import State, services

__all__ = ["LABEL", "ModalFake", "modal_fake"]


class ModalFake:
    """The server, on its own thread and event loop; ``state`` holds sandboxes and call counts
    (``state.calls``: every gRPC call by method name; clear it to start a count)."""

    def __init__(self) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.state = State(self.url)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True, name="modal-fake")
        self._server: Server | None = None
        self._reaper: asyncio.Task[None] | None = None

    def env(self) -> dict[str, str]:
        return {"MODAL_SERVER_URL": self.url, "MODAL_TOKEN_ID": "ak-fake", "MODAL_TOKEN_SECRET": "as-fake"}

    def _call(self, coro: Any) -> Any:
        fut: Future[Any] = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return fut.result(timeout=60)

    def start(self) -> ModalFake:
        self._thread.start()

        async def up() -> None:
            self._server = Server(services(self.state))
            await self._server.start("127.0.0.1", self.port)
            self._reaper = asyncio.ensure_future(self.state.reap())

        self._call(up())
        return self

    def stop(self) -> None:
        async def down() -> None:
            if self._reaper:
                self._reaper.cancel()
            for box in list(self.state.boxes.values()):
                await self.state.finish(box, "terminated")
            if self._server:
                self._server.close()
                await self._server.wait_closed()

        try:
            self._call(down())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
            # only this fake's: other processes run fakes beside it
            docker.remove(*docker.leftovers(LABEL, self.state.owner))
            self.state.tls.remove()
            held = [ref for ref in self.state.images.values() if ref.startswith(SNAPSHOT_REPOSITORY)]
            docker.remove_image(*held, *self.state.deleted_images)


@contextmanager
def modal_fake() -> Iterator[ModalFake]:
    fake = ModalFake().start()
    try:
        yield fake
    finally:
        fake.stop()
