"""Ports on E2B, natively: E2B's edge serves every port of a sandbox at a preview host,
``sandbox.get_host(port)`` = ``{port}-{sandbox_id}.{sandbox_domain}``, over https (in the SDK's
debug mode, ``localhost:{port}`` over http, as its own ``get_sandbox_url`` does). No forwarder
runs on this host, so the URL works from anywhere, for as long as the sandbox runs, and
``forwarding`` is False (``praisonai compute port`` prints it and ends).

Who can open it: E2B's default is public (``allow_public_traffic``), so anyone with the URL
reaches the port; a sandbox created with ``network={"allow_public_traffic": False}`` asks for
the sandbox's ``traffic_access_token`` in an ``e2b-traffic-access-token`` header. This provider
never creates one (``_meta.create_options``), so its URLs need no header. Traffic through the
edge is not activity to E2B: only a renewal moves the sandbox's deadline (``_renewal``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from praisonai.compute.abilities import NoForwards


class PreviewHosts(NoForwards):
    """``E2BCompute``'s forwarder (``compute.abilities.ports``), built from its ``sandbox``: the
    connected sandbox of an instance (a paused one resumes; an unknown id raises
    ``InstanceNotFoundError``)."""

    def __init__(self, sandbox: Callable[[str], Awaitable[Any]]) -> None:
        self.sandbox = sandbox

    async def expose(self, instance_id: str, port: int) -> str:
        """The preview URL of ``port`` (the same for the same port: it is derived, not
        allocated); nothing needs to listen yet (E2B's edge answers 502 until it does)."""
        sandbox = await self.sandbox(instance_id)
        scheme = "http" if sandbox.connection_config.debug else "https"
        return f"{scheme}://{sandbox.get_host(port)}"
