"""The files page's routes: list a directory of an instance, download a file, upload one.

Every operation is the library's own (``AsyncSandbox.files``, ``read_file``, ``write_file``) on
the instance reached as ``praisonai sandbox cp`` reaches it, so the containment rules are the
API's: paths resolve inside the instance, a link the instance controls is reported as a link and
never followed, content never travels on a command line. A download is refused here, in one
sentence, unless the path is a regular file (a link is shown as a link, not fetched); the read
itself stays the library's contained read, whatever the instance swaps in meanwhile.
"""

from __future__ import annotations

import dataclasses
import posixpath
from collections.abc import Awaitable, Callable
from typing import TypeVar
from urllib.parse import quote

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

from praisonai._limits import MAX_READ_BYTES
from praisonai._portal import on_portal
from praisonai.compute import inventory
from praisonai.dashboard._body import read_body
from praisonai.sandbox import AsyncSandbox

#: The largest upload taken: a file goes in whole, as one comes out whole (``MAX_READ_BYTES``).
UPLOAD_MAX_BYTES = MAX_READ_BYTES

T = TypeVar("T")


async def on_instance(
    instance_id: str, doing: str, use: Callable[[AsyncSandbox], Awaitable[T]], op: str = "files"
) -> T:
    """``use`` on a handle of the instance (never owned here: closing it only lets go), on
    praisonai's portal loop where the library keeps its instances; ``doing`` and ``op`` name the
    act in the sentence for an instance that is nowhere."""
    provider = await anyio.to_thread.run_sync(inventory.provider_of, instance_id, doing, op)

    async def attached() -> T:
        sandbox = await AsyncSandbox.connect(instance_id, provider)
        try:
            return await use(sandbox)
        finally:
            await sandbox.close()

    return await on_portal(attached)


async def _list(request: Request) -> JSONResponse:
    """A directory's entries, directories first; ``path`` comes back normalised (``d/..`` is
    ``.``), so the page walks up by appending ``/..``."""
    path = posixpath.normpath(request.query_params.get("path") or ".")
    entries = await on_instance(
        request.path_params["instance_id"], "list files of", lambda sb: sb.files.list(path)
    )
    rows = sorted((dataclasses.asdict(e) for e in entries), key=lambda e: (e["type"] != "dir", e["name"]))
    return JSONResponse({"path": path, "entries": rows})


async def _download(request: Request) -> Response:
    path = request.query_params.get("path") or ""

    async def read(sandbox: AsyncSandbox) -> bytes | str:
        entry = await sandbox.files.stat(path)
        if entry.type != "file":
            shown = f"a link to {entry.symlink_target!r}" if entry.type == "symlink" else f"a {entry.type}"
            return (
                f"{path} is {shown}, not a regular file: only files are downloaded (links are not followed)"
            )
        return await sandbox.read_file(path)

    body = await on_instance(request.path_params["instance_id"], "download from", read)
    if isinstance(body, str):
        return PlainTextResponse(body, status_code=400)
    name = posixpath.basename(path) or "file"
    disposition = f"attachment; filename*=UTF-8''{quote(name)}"
    return Response(body, media_type="application/octet-stream", headers={"content-disposition": disposition})


async def _upload(request: Request) -> Response:
    """The request's body, whole, to the file ``path`` (its directories made as needed)."""
    path = request.query_params.get("path") or ""
    limit = f"{UPLOAD_MAX_BYTES // (1 << 20)} MiB"
    too_large = f"the upload is over {limit}; copy it with praisonai sandbox cp"
    body = await read_body(request, UPLOAD_MAX_BYTES, too_large)

    async def write(sandbox: AsyncSandbox) -> None:
        await sandbox.write_file(path, body)

    await on_instance(request.path_params["instance_id"], "upload to", write)
    return JSONResponse({"path": path, "size": len(body)})


ROUTES: list[BaseRoute] = [
    Route("/api/instances/{instance_id}/files", _list),
    Route("/api/instances/{instance_id}/file", _download, methods=["GET"]),
    Route("/api/instances/{instance_id}/file", _upload, methods=["PUT"]),
]
