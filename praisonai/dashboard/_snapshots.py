"""An instance's snapshots page's routes: its snapshots listed from the home's ledger, a new one
taken, one started from (a new instance), rolled back to and removed. Each is the library's call
that the CLI makes: ``sb.snapshot`` (``sandbox snapshot``), ``compute.snapshots.provision_from``
(``sandbox create --from-snapshot``), ``sb.restore`` (``sandbox restore``) and
``compute.snapshots.remove`` (``compute snapshots rm``).

A snapshot in an address or a body is its id or its name. One this home does not hold is a 404
sentence before any instance is looked for; another provider's is the library's sentence (400). A
provider that cannot roll an instance back in place (docker) refuses in its own sentence, which
says what works instead (a new instance from the snapshot: this page's ``fork``).
"""

from __future__ import annotations

import dataclasses
import functools
import time
from typing import Any

import anyio
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

from praisonai._errors import ConfigError
from praisonai._portal import on_portal
from praisonai._times import duration, size
from praisonai._types import InstanceInfo
from praisonai.compute import snapshots
from praisonai.compute.snapshots import SnapshotInfo
from praisonai.dashboard._body import read_json_object
from praisonai.dashboard._files import on_instance
from praisonai.sandbox.provisioning import plan


def row(snapshot: SnapshotInfo, now: float) -> dict[str, Any]:
    """A snapshot as ``compute snapshots --json`` prints it, with its age and size as the table
    prints them (``age``, ``size``: the page formats nothing itself)."""
    return {
        **dataclasses.asdict(snapshot),
        "age": duration(now - snapshot.created_at),
        "size": size(snapshot.size_bytes),
    }


async def _list(request: Request) -> JSONResponse:
    """The snapshots taken of the instance, oldest first: a ledger read, so those of an instance
    since shut down are listed too (new instances still start from them)."""
    instance_id = request.path_params["instance_id"]
    found = await anyio.to_thread.run_sync(snapshots.list_snapshots)
    now = time.time()
    return JSONResponse({"snapshots": [row(s, now) for s in found if s.source == instance_id]})


async def _take(request: Request) -> Response:
    """``{"name": null | NAME}``: snapshot the instance while it runs; 201 with the snapshot."""
    body = await read_json_object(request, '{"name": "before-upgrade"}')
    name = await anyio.to_thread.run_sync(snapshots.check_name, body.get("name"))  # before the instance
    taken = await on_instance(
        request.path_params["instance_id"], "snapshot", lambda sb: sb.snapshot(name), op="snapshot"
    )
    return JSONResponse(row(taken, time.time()), status_code=201)


async def _restore(request: Request) -> Response:
    """``{"snapshot": ID_OR_NAME}``: roll the instance back to it under the same id."""
    body = await read_json_object(request, '{"snapshot": "snap_0123456789ab"}')
    ref = body.get("snapshot")
    if not isinstance(ref, str) or not ref:
        raise HTTPException(400, 'name the snapshot to restore: {"snapshot": "its id or name"}')
    found = await _find(ref, "restore")
    info = await on_instance(
        request.path_params["instance_id"], "restore", lambda sb: sb.restore(found), op="restore"
    )
    request.app.state.survey.again()
    return JSONResponse({"instance": info.instance_id, "snapshot": found.id})


async def _fork(request: Request) -> Response:
    """One new instance from the snapshot, of the provider that holds it, in the default config
    (no environment file: config never comes from a snapshot); 201 with its id."""
    found = await _find(request.path_params["snapshot"], "provision")
    info = await on_portal(_start_from, found)
    request.app.state.survey.again()
    return JSONResponse({"instance": info.instance_id, "snapshot": found.id}, status_code=201)


async def _start_from(snapshot: SnapshotInfo) -> InstanceInfo:
    provider = await anyio.to_thread.run_sync(snapshots.provider_of, snapshot)
    chosen = await anyio.to_thread.run_sync(functools.partial(plan, provider, None, environment=False))
    return await snapshots.provision_from(chosen.provider, chosen.config, snapshot)


async def _remove(request: Request) -> Response:
    """Remove the snapshot from its provider and the home; 409 with the provider's sentence while
    an instance still starts from it (docker keeps an image its container runs from)."""
    found = await _find(request.path_params["snapshot"], "remove_snapshot")
    try:
        held = await on_portal(snapshots.remove, found)
    except ConfigError as exc:  # found already: what is left is the provider's refusal
        return PlainTextResponse(str(exc), status_code=409)
    return JSONResponse({"snapshot": found.id, "held": held})


async def _find(ref: str, op: str) -> SnapshotInfo:
    """The home's snapshot ``ref``; else a 404 with the library's sentence (no such snapshot is
    the one refusal of ``find`` asked for a text without a provider)."""
    try:
        return await anyio.to_thread.run_sync(functools.partial(snapshots.find, ref, op=op))
    except ConfigError as exc:
        raise HTTPException(404, str(exc)) from None


ROUTES: list[BaseRoute] = [
    Route("/api/instances/{instance_id}/snapshots", _list, methods=["GET"]),
    Route("/api/instances/{instance_id}/snapshots", _take, methods=["POST"]),
    Route("/api/instances/{instance_id}/restore", _restore, methods=["POST"]),
    Route("/api/snapshots/{snapshot}/fork", _fork, methods=["POST"]),
    Route("/api/snapshots/{snapshot}", _remove, methods=["DELETE"]),
]
