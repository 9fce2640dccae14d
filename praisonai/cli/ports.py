"""``praisonai compute port ID PORT``: a URL that reaches a port inside an instance.

Where that URL is a forward from this host (docker, ssh, kubernetes: ``compute.forwards``), it
lives as long as this command, as ``kubectl port-forward``'s does: the URL is printed, then the
command waits until Ctrl-C (or SIGTERM/SIGHUP) and stops the forward. Where the port is reachable
without one (a local instance shares this host's network; a vendor's own URL, such as an E2B
preview host or a Modal tunnel), the URL is printed and the command ends.
"""

from __future__ import annotations

import threading
from types import FrameType
from typing import Annotated

import typer

from praisonai import _portal
from praisonai.cli import _output, _signals
from praisonai.compute.inventory import provider_of


def port(
    instance_id: Annotated[str, typer.Argument(metavar="INSTANCE_ID", help="The instance (see `ps`).")],
    port_number: Annotated[
        int, typer.Argument(metavar="PORT", min=1, max=65535, help="The TCP port inside the instance.")
    ],
) -> None:
    """Print a URL that reaches PORT inside the instance; keep a forward open until Ctrl-C.

    Exits 1 when the instance is unknown or its provider cannot expose ports.
    """
    provider = provider_of(instance_id, "expose a port of", "expose")
    url = _portal.call(provider.expose, instance_id, port_number)
    typer.echo(_output.safe(url))  # the vendor's preview URL
    forwarder = provider.forwarder
    if forwarder is None or not forwarder.forwarding(instance_id, port_number):
        return  # reachable without this process
    _output.note(f"forwarding {url} to port {port_number} of {instance_id}; press Ctrl-C to stop")
    stop = threading.Event()

    def on_signal(number: int, frame: FrameType | None) -> None:
        stop.set()

    try:
        with _signals.handling(on_signal):
            while not stop.wait(1.0):  # a timed wait: signal handlers run between waits
                pass
    finally:
        forwarder.stop(instance_id)
