"""The sides bench_cloud.py compares, per vendor: ours, the raw SDK (the floor) and the peer.

Every side has the same async surface: ``provision(env=None) -> handle``, ``run(handle, cmd,
timeout=None) -> (exit_code, stdout, stderr)``, ``write(handle, name, data)``, ``read(handle,
name) -> bytes``, ``shutdown(handle)``, and ``list_expr``: a Python expression that builds a fresh
adapter of this side in another process (for the cross-process list check). ``name`` is a bare
file name; each side puts it where its API wants it (ours: relative to the workspace; the raw SDKs
and the peer: absolute, under /tmp).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from _cloud_fly import PEER_LIST_EXPR, RawFly, start_fake
from _cloud_tenki import RawTenki
from _cloud_tenki import fake_server as tenki_fake_server

IMAGE = "praisonai-sandbox:latest"
Run = tuple[int, str, str]


# ---- ours: praisonai.compute.registry.resolve_compute -------------------------------------------


class Ours:
    side = "ours"

    def __init__(self, vendor: str, image: str = IMAGE) -> None:
        from praisonai.compute.registry import resolve_compute

        # Modal's default image is python:3.12-slim; the fake only serves local images.
        self.spec: Any = {"type": "modal", "image": image} if vendor == "modal" else vendor
        self.p: Any = resolve_compute(self.spec)
        registry = "__import__('praisonai.compute.registry', fromlist=['_'])"
        self.list_expr = f"{registry}.resolve_compute({self.spec!r})"

    async def provision(self, env: dict[str, str] | None = None) -> str:
        return str((await self.p.provision({"env": env or {}})).instance_id)

    async def run(self, h: str, cmd: str, timeout: float | None = None) -> Run:
        r = await (self.p.execute(h, cmd) if timeout is None else self.p.execute(h, cmd, timeout=timeout))
        return r.exit_code, r.stdout, r.stderr

    async def write(self, h: str, name: str, data: bytes) -> None:
        await self.p.write_file(h, name, data)

    async def read(self, h: str, name: str) -> bytes:
        return bytes(await self.p.read_file(h, name))

    async def shutdown(self, h: str) -> None:
        await self.p.shutdown(h)


# ---- the peer: praisonai-sandbox's compute adapters, through their own API ---------------------

PEER_CLASSES = {
    "e2b": ("praisonai_sandbox.compute.e2b", "E2BCompute"),
    "modal": ("praisonai_sandbox.compute.modal_compute", "ModalCompute"),
    "daytona": ("praisonai_sandbox.compute.daytona", "DaytonaCompute"),
    "flyio": ("praisonai_sandbox.compute.flyio", "FlyioCompute"),
    "tenki": ("praisonai_sandbox.compute.tenki", "TenkiCompute"),
}


class Peer:
    """``praisonai_sandbox.compute.<vendor>``: provision(ComputeConfig), execute -> dict,
    upload_file/download_file between local paths and the instance."""

    side = "peer"

    def __init__(self, vendor: str) -> None:
        import importlib

        module, cls = PEER_CLASSES[vendor]
        self.p: Any = getattr(importlib.import_module(module), cls)()
        self.list_expr = (
            PEER_LIST_EXPR if vendor == "flyio" else f"__import__({module!r}, fromlist=['_']).{cls}()"
        )
        self.tmp = Path(tempfile.mkdtemp(prefix="bench-cloud-peer-"))

    async def provision(self, env: dict[str, str] | None = None) -> str:
        from praisonaiagents.managed import ComputeConfig

        return str((await self.p.provision(ComputeConfig(image=IMAGE, env=env or {}))).instance_id)

    async def run(self, h: str, cmd: str, timeout: float | None = None) -> Run:
        r = await self.p.execute(h, cmd, timeout=int(timeout or 300))
        return int(r["exit_code"]), str(r["stdout"]), str(r["stderr"])

    async def write(self, h: str, name: str, data: bytes) -> None:
        local = self.tmp / name
        local.write_bytes(data)
        if not await self.p.upload_file(h, str(local), f"/tmp/{name}"):
            raise RuntimeError("the peer's upload_file returned False")

    async def read(self, h: str, name: str) -> bytes:
        local = self.tmp / f"down-{name}"
        if not await self.p.download_file(h, f"/tmp/{name}", str(local)):
            raise RuntimeError("the peer's download_file returned False")
        return local.read_bytes()

    async def shutdown(self, h: str) -> None:
        await self.p.shutdown(h)


SANDBOX_CLASSES = {
    "e2b": ("praisonai_sandbox.e2b", "E2BSandbox"),
    "modal": ("praisonai_sandbox.modal", "ModalSandbox"),
    "daytona": ("praisonai_sandbox.daytona", "DaytonaSandbox"),
}


class PeerSandbox:
    """``praisonai_sandbox.<vendor>``'s one-sandbox class: ``start()`` is provision, ``stop()``
    shutdown, ``run_command(cmd, limits, env)`` exec (the env given at provision is passed on
    every call: its only env channel), ``write_file`` / ``read_file`` on an absolute path. It has
    no way to list sandboxes, so ``list_expr`` is None."""

    side = "peer-sbx"
    list_expr = None

    def __init__(self, vendor: str) -> None:
        import importlib

        module, cls = SANDBOX_CLASSES[vendor]
        self.cls: Any = getattr(importlib.import_module(module), cls)
        self.vendor = vendor
        self.boxes: dict[str, tuple[Any, dict[str, str] | None]] = {}

    async def provision(self, env: dict[str, str] | None = None) -> str:
        import uuid

        box = self.cls() if self.vendor == "e2b" else self.cls(image=IMAGE)
        await box.start()
        handle = uuid.uuid4().hex[:12]
        self.boxes[handle] = (box, env)
        return handle

    async def run(self, h: str, cmd: str, timeout: float | None = None) -> Run:
        from praisonaiagents.sandbox import ResourceLimits

        box, env = self.boxes[h]
        r = await box.run_command(cmd, limits=ResourceLimits(timeout_seconds=int(timeout or 300)), env=env)
        code = -1 if r.exit_code is None else int(r.exit_code)
        return code, r.stdout or "", r.stderr or r.error or ""

    async def write(self, h: str, name: str, data: bytes) -> None:
        if not await self.boxes[h][0].write_file(f"/tmp/{name}", data):
            raise RuntimeError("the peer's write_file returned False")

    async def read(self, h: str, name: str) -> bytes:
        got = await self.boxes[h][0].read_file(f"/tmp/{name}")
        if got is None:
            raise RuntimeError("the peer's read_file returned None")
        return got.encode() if isinstance(got, str) else bytes(got)

    async def shutdown(self, h: str) -> None:
        await self.boxes.pop(h)[0].stop()


# ---- the floor: each vendor's SDK called directly, on a handle already held ---------------------


class RawE2B:
    """``e2b.AsyncSandbox``: create, commands.run, files.write / read(format="bytes"), kill."""

    side = "raw"

    def __init__(self, image: str = IMAGE) -> None:  # E2B takes a template, not an image
        self.boxes: dict[str, Any] = {}

    async def provision(self, env: dict[str, str] | None = None) -> str:
        from e2b import AsyncSandbox

        sbx = await AsyncSandbox.create(envs=env)
        self.boxes[sbx.sandbox_id] = sbx
        return str(sbx.sandbox_id)

    async def run(self, h: str, cmd: str, timeout: float | None = None) -> Run:
        r = await self.boxes[h].commands.run(cmd)
        return r.exit_code, r.stdout, r.stderr

    async def write(self, h: str, name: str, data: bytes) -> None:
        await self.boxes[h].files.write(f"/tmp/{name}", data)

    async def read(self, h: str, name: str) -> bytes:
        return bytes(await self.boxes[h].files.read(f"/tmp/{name}", format="bytes"))

    async def shutdown(self, h: str) -> None:
        await self.boxes.pop(h).kill()


class RawModal:
    """``modal.Sandbox`` (.aio): create on an app looked up once, exec + read both streams + wait,
    filesystem.write_bytes / read_bytes, terminate."""

    side = "raw"

    def __init__(self, image: str = IMAGE) -> None:
        self.boxes: dict[str, Any] = {}
        self.app: Any = None
        self.image = image

    async def provision(self, env: dict[str, str] | None = None) -> str:
        import modal

        if self.app is None:
            self.app = await modal.App.lookup.aio("praisonai-bench-raw", create_if_missing=True)
        image = modal.Image.from_registry(self.image)
        given: dict[str, str | None] | None = dict(env) if env else None
        sb = await modal.Sandbox.create.aio(app=self.app, image=image, env=given)
        self.boxes[sb.object_id] = sb
        return str(sb.object_id)

    async def run(self, h: str, cmd: str, timeout: float | None = None) -> Run:
        p = await self.boxes[h].exec.aio("sh", "-c", cmd)
        out, err = await p.stdout.read.aio(), await p.stderr.read.aio()
        return int(await p.wait.aio()), out, err

    async def write(self, h: str, name: str, data: bytes) -> None:
        await self.boxes[h].filesystem.write_bytes.aio(data, f"/tmp/{name}")

    async def read(self, h: str, name: str) -> bytes:
        return bytes(await self.boxes[h].filesystem.read_bytes.aio(f"/tmp/{name}"))

    async def shutdown(self, h: str) -> None:
        await self.boxes.pop(h).terminate.aio()


class RawDaytona:
    """``daytona.AsyncDaytona`` (one client for the run): create(), process.exec,
    fs.upload_file / download_file, delete."""

    side = "raw"

    def __init__(self, image: str = IMAGE) -> None:  # Daytona's default snapshot, as ours
        self.boxes: dict[str, Any] = {}
        self.client: Any = None

    async def provision(self, env: dict[str, str] | None = None) -> str:
        from daytona import AsyncDaytona, CreateSandboxFromSnapshotParams

        if self.client is None:
            self.client = AsyncDaytona()
        sb = await self.client.create(CreateSandboxFromSnapshotParams(env_vars=env))
        self.boxes[sb.id] = sb
        return str(sb.id)

    async def run(self, h: str, cmd: str, timeout: float | None = None) -> Run:
        r = await self.boxes[h].process.exec(cmd)
        return int(r.exit_code), str(r.result), ""

    async def write(self, h: str, name: str, data: bytes) -> None:
        await self.boxes[h].fs.upload_file(data, f"/tmp/{name}")

    async def read(self, h: str, name: str) -> bytes:
        return bytes(await self.boxes[h].fs.download_file(f"/tmp/{name}"))

    async def shutdown(self, h: str) -> None:
        await self.boxes.pop(h).delete()

    async def close(self) -> None:
        if self.client is not None:
            await self.client.close()


RAW: dict[str, Any] = {
    "e2b": RawE2B,
    "modal": RawModal,
    "daytona": RawDaytona,
    "flyio": RawFly,
    "tenki": RawTenki,
}

# ---- the fakes, and how each counts the vendor calls it answers ---------------------------------


class Fake:
    """One vendor's wire fake, started; ``counts()`` reads its request counter by route,
    ``reset()`` zeroes it; ``env`` points the vendor SDK at it."""

    def __init__(self, vendor: str) -> None:
        self.vendor = vendor
        if vendor == "e2b":
            from fakes.e2b import E2BFake

            self.server: Any = E2BFake().__enter__()
            self.env = self.server.env()
        elif vendor == "modal":
            from fakes.modal import ModalFake

            self.server = ModalFake().start()
            self.env = self.server.env()
        elif vendor == "flyio":
            self.server, self.env = start_fake()
        elif vendor == "tenki":
            self.server, self.env = tenki_fake_server()
        else:
            from fakes.daytona import DaytonaFake

            self.server = DaytonaFake().__enter__()
            self.env = {"DAYTONA_API_URL": self.server.api_url, "DAYTONA_API_KEY": "fake-key"}

    def counts(self) -> dict[str, int]:
        if self.vendor == "e2b":  # a list of "METHOD /path": the ids in paths folded
            out: dict[str, int] = {}
            for call in list(self.server.calls):
                method, _, path = call.partition(" ")
                parts = [_fold(p) for p in path.split("/")]
                key = f"{method} {'/'.join(parts)}"
                out[key] = out.get(key, 0) + 1
            return out
        return dict(self.server.state.calls if self.vendor == "modal" else self.server.calls)

    def reset(self) -> None:
        (self.server.state.calls if self.vendor == "modal" else self.server.calls).clear()

    def close(self) -> None:
        if self.vendor == "modal":
            self.server.stop()  # its own sandboxes only: each fake labels them with its id
        else:
            self.server.__exit__(None, None, None)


def _fold(segment: str) -> str:
    """A sandbox or snapshot id in an E2B path becomes ``{id}``."""
    return "{id}" if segment.startswith(("i", "snap")) and len(segment) > 12 else segment


def set_env(env: dict[str, str]) -> dict[str, str | None]:
    """Apply ``env`` to this process (children inherit it); return what it replaced."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    return saved


def restore_env(saved: dict[str, str | None]) -> None:
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
