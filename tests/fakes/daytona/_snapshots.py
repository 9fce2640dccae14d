"""The Daytona fake's snapshots, as daytona 0.226.1's ``SnapshotsApi`` and ``SandboxApi`` call
them: ``POST /sandbox/{id}/snapshot`` (``sandbox.create_snapshot(name)``: a ``docker commit`` of
the sandbox's container, active at once, without the sandbox's env: a snapshot keeps the
filesystem), ``GET /snapshots/{id or name}``, ``GET /snapshots?page=&limit=`` (paginated, newest
last) and ``DELETE /snapshots/{id}`` (``snapshot.delete``, which resolves a name to its id first;
an unknown id is 404). Each snapshot has an id of its own (a UUID), as on Daytona; creating a
sandbox from one names it (``snapshot`` in the body). A deleted snapshot starts no sandbox; its
docker image goes once no container uses it (or when the fake closes)."""

from __future__ import annotations

import math
import time
import uuid
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any

from fakes import docker
from fakes.daytona import _sandboxes
from fakes.daytona._wire import send_error, send_json

if TYPE_CHECKING:
    from fakes.daytona import DaytonaFake


def take(fake: DaytonaFake, box: dict[str, Any], name: str) -> None:
    """``create_snapshot``: the sandbox's container committed as snapshot ``name``."""
    tag = f"praisonai-daytona-fake-snapshot:{fake.fake_id}-{uuid.uuid4().hex[:8]}"
    _sandboxes.commit(box["_container"], tag, list(box["env"]))
    fake.snapshots[name] = tag
    fake.snapshot_ids[name] = str(uuid.uuid4())


def snapshot_route(
    fake: DaytonaFake, h: BaseHTTPRequestHandler, method: str, parts: list[str], query: dict[str, str]
) -> None:
    """``/snapshots...``: get, list, delete."""
    if len(parts) == 1 and method == "GET":
        names = list(fake.snapshots)
        limit = int(query.get("limit") or 100)
        page = int(query.get("page") or 1)
        items = [_dto(fake, name) for name in names[(page - 1) * limit : page * limit]]
        pages = max(1, math.ceil(len(names) / limit))
        return send_json(h, 200, {"items": items, "total": len(names), "page": page, "totalPages": pages})
    if len(parts) != 2:
        return send_error(h, 404, f"not modelled by the fake: {method} {h.path}")
    if method == "GET":
        name = _named(fake, parts[1], by_name=True)
        if name is None:
            return send_error(h, 404, f"Snapshot {parts[1]} not found")
        return send_json(h, 200, _dto(fake, name))
    if method == "DELETE":
        name = _named(fake, parts[1], by_name=False)
        if name is None:
            return send_error(h, 404, f"Snapshot with ID {parts[1]} not found")
        del fake.snapshot_ids[name]
        tag = fake.snapshots.pop(name)
        if docker.docker("rmi", tag).returncode != 0:  # a sandbox's container still uses it
            fake.deleted_images.append(tag)
        return send_json(h, 200, {})
    return send_error(h, 404, f"not modelled by the fake: {method} {h.path}")


def _named(fake: DaytonaFake, key: str, *, by_name: bool) -> str | None:
    """The snapshot's name from its id (or from its name, ``by_name``)."""
    if by_name and key in fake.snapshots:
        return key
    return next((name for name, found in fake.snapshot_ids.items() if found == key), None)


def _dto(fake: DaytonaFake, name: str) -> dict[str, Any]:
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return {
        "id": fake.snapshot_ids.get(name, name),
        "organizationId": "fake-org",
        "general": False,
        "name": name,
        "imageName": name,
        "state": "active",
        "size": None,
        "entrypoint": None,
        "cpu": 1,
        "gpu": 0,
        "mem": 1,
        "disk": 3,
        "errorReason": None,
        "createdAt": now,
        "updatedAt": now,
        "lastUsedAt": None,
        "sourceSandboxId": None,
    }
