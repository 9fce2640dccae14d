"""bench_cloud.py's Tenki pieces: the raw SDK side (the floor) and the fake's environment.

Kept apart from _cloud_sides.py so each vendor's sides stay one screen and that module under its
size limit. The peer's Tenki adapter is ``praisonai_sandbox.compute.tenki.TenkiCompute`` (its
one-sandbox classes have no Tenki one); it resolves a workspace with ``who_am_i`` unless
``TENKI_WORKSPACE_ID`` is set, so the fake's environment sets it.
"""

from __future__ import annotations

from typing import Any


class RawTenki:
    """``tenki.AsyncClient`` (one client for the run): create, exec("sh", "-c", cmd) on the
    sandbox handle it returned (its data plane already bound), fs.write_bytes / read_bytes under
    /home/tenki (Tenki's fs reaches only its workdir), close (which terminates)."""

    side = "raw"

    def __init__(self, image: str | None = None) -> None:  # Tenki's stock image, as ours by default
        self.boxes: dict[str, Any] = {}
        self.client: Any = None

    async def provision(self, env: dict[str, str] | None = None) -> str:
        from tenki import AsyncClient

        if self.client is None:
            self.client = AsyncClient()
        sb = await self.client.create(env=env)
        self.boxes[sb.id] = sb
        return str(sb.id)

    async def run(self, h: str, cmd: str, timeout: float | None = None) -> tuple[int, str, str]:
        r = await self.boxes[h].exec("sh", "-c", cmd, timeout=timeout)
        return int(r.exit_code), r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")

    async def write(self, h: str, name: str, data: bytes) -> None:
        await self.boxes[h].fs.write_bytes(f"/home/tenki/{name}", data)

    async def read(self, h: str, name: str) -> bytes:
        return bytes(await self.boxes[h].fs.read_bytes(f"/home/tenki/{name}"))

    async def shutdown(self, h: str) -> None:
        await self.boxes.pop(h).close()

    async def close(self) -> None:
        if self.client is not None:
            await self.client.close()


def fake_server() -> tuple[Any, dict[str, str]]:
    """The Tenki fake, started, and the variables that point the SDK (and the peer) at it."""
    from fakes.tenki import TenkiFake

    server = TenkiFake().__enter__()
    env = {"TENKI_API_ENDPOINT": server.base_url, "TENKI_API_KEY": "tk_fake", "TENKI_WORKSPACE_ID": "ws-fake"}
    return server, env
