"""The Fly fake's routes: one function per endpoint, JSON in and out."""

from __future__ import annotations

import json
import socket
import time
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any

from fakes.flyio import _machines

NONCE_HEADER = "fly-machine-lease-nonce"

if TYPE_CHECKING:
    from fakes.flyio import FlyioFake

_CODES = {
    400: "invalid_argument",
    404: "not_found",
    408: "deadline_exceeded",
    409: "name_taken",
    412: "failed_precondition",
    422: "unprocessable",
    429: "rate_limited",
}


def route(fake: FlyioFake, h: BaseHTTPRequestHandler, path: list[str], query: dict[str, str]) -> None:
    """Dispatch ``h``'s request (path split on ``/``) to its endpoint, faults first."""
    length = int(h.headers.get("Content-Length") or 0)
    raw = h.rfile.read(length) if length else b""
    body: Any = json.loads(raw) if raw.strip() else None
    kind = _kind(path)
    with fake.lock:
        fake.calls[f"{h.command} {kind}"] = fake.calls.get(f"{h.command} {kind}", 0) + 1
        fake.requests.append((h.command, "/" + "/".join(path), body))
        if h.command != "GET":
            fake.mutations.append((h.command, "/" + "/".join(path), body, h.headers.get(NONCE_HEADER)))
        fault = fake.faults.pop(0) if fake.faults else None
    if fake.token is not None and h.headers.get("Authorization") != f"Bearer {fake.token}":
        return _send(h, 401, {"error": "You must be authenticated to view this.", "status": "unauthorized"})
    if fault is not None and not fault[2]:
        headers = {} if fault[1] is None else {"retry-after": f"{fault[1]:g}"}
        return _send(h, fault[0], {"error": "injected fault", "status": _CODES.get(fault[0], "")}, headers)
    status, answer = _dispatch(fake, h.command, path, query, body, h.headers.get(NONCE_HEADER))
    if fault is not None and fault[0] == 0:  # CUT: the work is done, the answer never leaves
        h.close_connection = True
        h.connection.shutdown(socket.SHUT_RDWR)
        return None
    if fault is not None:
        status, answer = fault[0], "injected fault after the work was done"
    with fake.lock:
        fake.answers.append((h.command, "/" + "/".join(path), status))
    if status >= 400:
        code, text = answer if isinstance(answer, tuple) else (_CODES.get(status, "unknown"), answer)
        answer = {"error": text, "status": code}
    _send(h, status, answer)


def _kind(path: list[str]) -> str:
    if len(path) <= 3:
        return "app" if len(path) == 3 or path[-1:] == ["apps"] else "other"
    if len(path) == 4:
        return "machines"
    return path[5] if len(path) > 5 else "machine"


def _dispatch(
    fake: FlyioFake, method: str, path: list[str], query: dict[str, str], body: Any, nonce: str | None
) -> tuple[int, Any]:
    if path[:2] == ["v1", "apps"] and len(path) == 2 and method == "POST":
        return _create_app(fake, body or {})
    if len(path) < 3 or path[:2] != ["v1", "apps"]:
        return 404, "no such route"
    app = path[2]
    if len(path) == 3:
        found = method == "GET" and app in fake.apps
        return (200, fake.apps[app]) if found else (404, f"app {app} not found")
    if app not in fake.apps:
        return 404, f"app {app} not found"
    if len(path) == 4 and path[3] == "machines":
        if method == "POST":
            return fake.create_machine(app, body or {})
        return 200, _list(fake, app, query)
    machine = fake.live(app, path[4]) if len(path) >= 5 else None
    if machine is None:
        return 404, f"machine {path[4] if len(path) >= 5 else ''} not found"
    action = path[5] if len(path) > 5 else ""
    if action == "lease":
        return _lease(fake, machine, method, body or {}, nonce)
    if (method == "DELETE" or action in ("stop", "start")) and (held := _held_by_other(machine, nonce)):
        return 409, ("failed_precondition", held)
    if not action:
        return _delete(fake, machine, query) if method == "DELETE" else (200, fake.view(machine))
    handlers = {
        "wait": lambda: _wait(fake, machine, query),
        "stop": lambda: _stop(fake, machine, body),
        "start": lambda: _start(fake, machine),
        "exec": lambda: _exec(fake, machine, body or {}),
    }
    return handlers[action]() if action in handlers else (404, f"no such route {action}")


def _held_by_other(machine: dict[str, Any], nonce: str | None) -> str | None:
    """Why a mutation without the lease's nonce is refused, or None when it may go ahead."""
    lease = machine.get("_lease")
    if lease is None or lease["expires_at"] <= time.time() or lease["nonce"] == nonce:
        return None
    return (
        f"machine {machine['id']}: lease currently held by {lease['owner']}, expires at {lease['expires_at']}"
    )


def _lease(
    fake: FlyioFake, machine: dict[str, Any], method: str, body: dict[str, Any], nonce: str | None
) -> tuple[int, Any]:
    """``POST`` takes the lease (or refreshes it with its nonce), ``GET`` shows it, ``DELETE``
    releases it (its nonce required); another holder's live lease is 409."""
    held = _held_by_other(machine, nonce)
    lease = machine.get("_lease")
    if method == "GET":
        live = lease is not None and lease["expires_at"] > time.time()
        return (200, {"status": "success", "data": _shown(lease)}) if live else (404, "no lease")
    if held:
        return 409, ("failed_precondition", held)
    if method == "DELETE":
        machine["_lease"] = None
        return 200, {"ok": True}
    if lease is None or lease["nonce"] != nonce:
        lease = fake.new_lease(machine, "praisonai-test@fake", str(body.get("description") or ""))
    lease["expires_at"] = int(time.time() + int(body.get("ttl") or 30))
    return 200, {"status": "success", "data": _shown(lease)}


def _shown(lease: dict[str, Any] | None) -> dict[str, Any]:
    return dict(lease or {})


def _create_app(fake: FlyioFake, body: dict[str, Any]) -> tuple[int, Any]:
    name = body.get("app_name")
    if not name:
        return 400, "app_name is required"
    if name in fake.apps:
        return 422, f"app {name} already exists"
    fake.apps[name] = {"id": name, "name": name, "organization": {"slug": body.get("org_slug", "personal")}}
    return 201, fake.apps[name]


def _list(fake: FlyioFake, app: str, query: dict[str, str]) -> list[dict[str, Any]]:
    wanted = {k.removeprefix("metadata."): v for k, v in query.items() if k.startswith("metadata.")}
    deleted = query.get("include_deleted") == "true"
    with fake.lock:
        found = [m for m in fake.machines.values() if m["_app"] == app and m["state"] != "creating"]
    return [
        fake.view(m)
        for m in found
        if (deleted or m["state"] != "destroyed")
        and all((m["config"].get("metadata") or {}).get(k) == v for k, v in wanted.items())
    ]


def _wait(fake: FlyioFake, machine: dict[str, Any], query: dict[str, str]) -> tuple[int, Any]:
    state, timeout = query.get("state", "started"), int(query.get("timeout", "60"))
    if not 1 <= timeout <= 60:
        return 400, "timeout must be between 1 and 60 seconds"
    deadline = time.monotonic() + timeout
    while machine["state"] != state:
        if time.monotonic() >= deadline:
            return 408, f"machine did not reach {state} in {timeout}s"
        time.sleep(0.05)
    return 200, {"ok": True}


def _stop(fake: FlyioFake, machine: dict[str, Any], body: Any) -> tuple[int, Any]:
    if body is None:
        return 400, "the request body must be JSON (send {} at least)"
    fake.stop(machine)
    return 200, {"ok": True}


def _start(fake: FlyioFake, machine: dict[str, Any]) -> tuple[int, Any]:
    if machine["state"] != "stopped":
        return 412, f"machine is {machine['state']}, not stopped"
    fake.start(machine)
    return 200, {"previous_state": "stopped"}


def _delete(fake: FlyioFake, machine: dict[str, Any], query: dict[str, str]) -> tuple[int, Any]:
    forced = "true" in (query.get("force"), query.get("kill"))
    if machine["state"] not in ("stopped", "created") and not forced:
        return 412, f"machine is {machine['state']}: stop it first or pass force=true"
    fake.destroy(machine)
    return 200, {"ok": True}


def _exec(fake: FlyioFake, machine: dict[str, Any], body: dict[str, Any]) -> tuple[int, Any]:
    if machine["state"] != "started":
        return 412, f"machine is {machine['state']}, not started"
    if "cmd" in body and not isinstance(body["cmd"], str):  # fly-go: MachineExecRequest.Cmd string
        return 400, "json: cannot unmarshal array into Go struct field MachineExecRequest.cmd of type string"
    argv = body.get("command") or (["sh", "-c", body["cmd"]] if body.get("cmd") else None)
    if not argv:
        return 400, "cmd or command is required"
    limit = min(fake.exec_limit_s, float(body.get("timeout") or fake.exec_limit_s))
    done = _machines.exec_argv(machine["_container"], argv, str(body.get("stdin") or "").encode(), limit)
    if done is None:
        return 408, "deadline_exceeded: exec did not finish in time"
    code, out, err = done
    answer: dict[str, Any] = {"stdout": out.decode(errors="replace"), "stderr": err.decode(errors="replace")}
    if code:
        answer["exit_code"] = code  # omitempty: absent when 0
    return 200, answer


def _send(h: BaseHTTPRequestHandler, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
    data = json.dumps(body).encode()
    h.send_response(status)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(data)))
    for key, value in (headers or {}).items():
        h.send_header(key, value)
    h.end_headers()
    h.wfile.write(data)
