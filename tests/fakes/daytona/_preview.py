"""The Daytona fake's signed preview URLs: ``GET /sandbox/{id}/ports/{port}/signed-preview-url``
answers a ``SignedPortPreviewUrl`` whose ``url`` is a forwarder on 127.0.0.1 that reaches the port
from inside the sandbox's container (as Daytona's runner does, in the sandbox's own network
namespace, so a server bound to the container's 127.0.0.1 answers too): each connection runs
praisonai's port relay in the container through ``docker exec -i``. One forwarder per token, all
stopped with the sandbox or the fake. Not modelled: expiry (recorded only) and ``expire``."""

from __future__ import annotations

import os
import uuid
from typing import Any

from praisonai.compute.forwards import Forward, TransportPipe, relay_argv
from praisonai.runtime.transport import ProcessTransport


def signed_preview(box: dict[str, Any], port: int, expires_in: str | None) -> dict[str, Any]:
    """A new signed preview URL of ``box``'s ``port`` (its forwarder kept in ``box["_previews"]``)."""
    container, token = box["_container"], uuid.uuid4().hex

    def dial() -> TransportPipe:
        argv = ["docker", "exec", "-i", container, *relay_argv(port)]
        return TransportPipe(ProcessTransport(argv, env=dict(os.environ), cwd="/"))

    forwarder = Forward(dial, f"daytona-fake-{port}")
    box.setdefault("_previews", []).append(forwarder)
    box.setdefault("_preview_ttls", []).append(expires_in)
    return {"sandboxId": box["id"], "port": port, "token": token, "url": forwarder.url}


def stop_previews(box: dict[str, Any]) -> None:
    for forwarder in box.pop("_previews", []):
        forwarder.close()
