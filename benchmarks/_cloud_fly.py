"""Fly.io's sides for bench_cloud.py: the raw REST floor (httpx, no SDK exists) and its fake.

Same surface as the sides in _cloud_sides.py. The peer (``praisonai_sandbox.compute.flyio``)
has its Machines API base URL as a module constant, ``FLY_API_BASE``, and no variable to move
it: ``point_peer`` sets that constant to the fake, the only way to reach it.
"""

from __future__ import annotations

import base64
import uuid
from typing import Any

APP = "praisonai-bench"
IMAGE = "praisonai-sandbox:latest"
Run = tuple[int, str, str]


class RawFly:
    """The Machines REST API with one ``httpx.AsyncClient``: create a machine (PID 1 ``sleep
    infinity``, as any client must give one), loop ``/wait`` until started, ``/exec`` with
    ``command`` argv, files as base64 through ``stdin`` and the answer, stop ``{}`` + forced
    delete. No leases, no retries: the floor."""

    side = "raw"

    def __init__(self, image: str = IMAGE) -> None:
        import os

        import httpx

        base = os.environ.get("FLY_API_HOSTNAME", "https://api.machines.dev").rstrip("/")
        self.app = os.environ.get("FLY_APP_NAME", APP)
        headers = {"Authorization": f"Bearer {os.environ.get('FLY_API_TOKEN', '')}"}
        self.http = httpx.AsyncClient(base_url=f"{base}/v1/apps/{self.app}", headers=headers, timeout=90)
        self.image = image

    async def provision(self, env: dict[str, str] | None = None) -> str:
        config = {"image": self.image, "env": env or {}, "init": {"exec": ["sleep", "infinity"]},
                  "restart": {"policy": "no"}, "auto_destroy": True}  # fmt: skip
        made = await self.http.post(
            "/machines", json={"name": f"raw-{uuid.uuid4().hex[:10]}", "config": config}
        )
        made.raise_for_status()
        machine = made.json()
        params = {"state": "started", "timeout": "60", "instance_id": machine["instance_id"]}
        while (await self.http.get(f"/machines/{machine['id']}/wait", params=params)).status_code == 408:
            pass
        return str(machine["id"])

    async def _exec(self, h: str, argv: list[str], stdin: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"command": argv, **({"stdin": stdin} if stdin is not None else {})}
        got = await self.http.post(f"/machines/{h}/exec", json=body)
        got.raise_for_status()
        return dict(got.json())

    async def run(self, h: str, cmd: str, timeout: float | None = None) -> Run:
        r = await self._exec(h, ["sh", "-c", cmd])
        return int(r.get("exit_code", 0)), str(r.get("stdout", "")), str(r.get("stderr", ""))

    async def write(self, h: str, name: str, data: bytes) -> None:
        await self._exec(h, ["sh", "-c", f"base64 -d > /tmp/{name}"], base64.b64encode(data).decode())

    async def read(self, h: str, name: str) -> bytes:
        return base64.b64decode((await self._exec(h, ["base64", f"/tmp/{name}"]))["stdout"])

    async def shutdown(self, h: str) -> None:
        await self.http.post(f"/machines/{h}/stop", json={})
        await self.http.delete(f"/machines/{h}", params={"force": "true"})

    async def close(self) -> None:
        await self.http.aclose()


def start_fake() -> tuple[Any, dict[str, str]]:
    """The Fly fake, started, with the bench's app made beforehand; the env pointing clients at it."""
    from fakes.flyio import FlyioFake

    server = FlyioFake().__enter__()
    server.create_app(APP)
    env = {"FLY_API_TOKEN": "fake-token", "FLY_APP_NAME": APP, "FLY_API_HOSTNAME": server.api_url}
    point_peer(server.api_url)
    return server, env


#: The peer's adapter in a child process, aimed at the fake the same way (FLY_API_HOSTNAME is
#: inherited), so that the cross-process list check measures the adapter, not its fixed URL.
PEER_LIST_EXPR = (
    "(lambda m: (setattr(m, 'FLY_API_BASE', __import__('os').environ['FLY_API_HOSTNAME'] + '/v1'), "
    "m.FlyioCompute())[1])(__import__('praisonai_sandbox.compute.flyio', fromlist=['_']))"
)


def point_peer(url: str) -> None:
    """Aim the peer's Fly adapter at ``url`` (its base URL is a module constant), if installed."""
    try:
        import praisonai_sandbox.compute.flyio as peer
    except ImportError:
        return
    peer.FLY_API_BASE = f"{url}/v1"
