"""The Daytona fake's routes: ``/api/...`` (control plane) and ``/toolbox/<id>/...`` (daemon)."""

from __future__ import annotations

import json
import posixpath
import socket
import time
import uuid
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any

from fakes.daytona import _sandboxes
from fakes.daytona._preview import signed_preview
from fakes.daytona._snapshots import snapshot_route, take
from fakes.daytona._wire import (
    multipart_fields,
    part_header,
    read_body,
    read_json,
    send_error,
    send_json,
)

if TYPE_CHECKING:
    from fakes.daytona import DaytonaFake

_DEFAULT_EXEC_TIMEOUT_S = 10  # the toolbox model: "Timeout in seconds, defaults to 10 seconds"


def route(
    fake: DaytonaFake, h: BaseHTTPRequestHandler, method: str, parts: list[str], query: dict[str, str]
) -> None:
    key = f"{method} /" + "/".join(p if i < 1 or p in _WORDS else "*" for i, p in enumerate(parts))
    with fake._lock:
        fake.calls[key] = fake.calls.get(key, 0) + 1
    try:
        if parts[:1] == ["api"]:
            _api(fake, h, method, parts[1:], query)
        elif parts[:1] == ["toolbox"] and len(parts) >= 2:
            _toolbox(fake, h, method, parts[1], parts[2:], query)
        else:
            send_error(h, 404, f"no route {h.path}")
    except (BrokenPipeError, ConnectionResetError):
        pass  # the client went away (the SDK drops its socket.io probe)
    except Exception as exc:
        send_error(h, 500, f"fake error: {exc!r}")


_WORDS = {
    "api",
    "toolbox",
    "sandbox",
    "process",
    "execute",
    "files",
    "info",
    "bulk-upload",
    "bulk-download",
    "toolbox-proxy-url",
    "last-activity",
    "autostop",
    "autodelete",
    "stop",
    "start",
    "ttl",
    "snapshot",
    "ports",
    "signed-preview-url",
    "labels",
    "socket.io",
    "snapshots",
    "pty",
    "create-connect",
    "resize",
}


def _api(
    fake: DaytonaFake, h: BaseHTTPRequestHandler, method: str, parts: list[str], query: dict[str, str]
) -> None:
    body = read_json(h) if method in ("POST", "PUT") and parts[-1:] != ["last-activity"] else None
    if parts[-1:] == ["last-activity"]:
        read_body(h)
    fake.requests.append((method, "/".join(parts[:1] + ["*"] * len(parts[1:2]) + parts[2:]), body))
    if fake._faults and parts[:1] != ["socket.io"]:
        status, retry_after = fake._faults.pop(0)
        headers = {"Retry-After": f"{retry_after:g}"} if retry_after is not None else None
        return send_error(h, status, f"injected {status}", headers=headers)
    if parts[:1] == ["snapshots"]:
        return snapshot_route(fake, h, method, parts, query)
    if parts[:1] != ["sandbox"]:
        return send_error(h, 404, "not modelled by the fake")
    if len(parts) == 1 and method == "POST":
        status, result = fake.create(body or {})
        return send_json(h, 200, result) if status == 200 else send_error(h, status, result)
    if len(parts) == 1 and method == "GET":
        wanted = json.loads(query["labels"]) if query.get("labels") else {}
        items = [
            fake.dto(b)
            for b in list(fake.sandboxes.values())
            if b["state"] != "destroyed" and all(b["labels"].get(k) == v for k, v in wanted.items())
        ]
        return send_json(h, 200, {"items": items, "nextCursor": None})
    box = fake.find(parts[1])
    if box is None:
        return send_error(h, 404, f"Sandbox with ID or name {parts[1]} not found")
    rest = parts[2:]
    if not rest and method == "GET":
        return send_json(h, 200, fake.dto(box))
    if not rest and method == "DELETE":
        fake.destroy(box)
        return send_json(h, 200, {**fake.dto(box), "state": "destroying"})
    if rest == ["toolbox-proxy-url"]:
        return send_json(h, 200, {"url": fake.dto(box)["toolboxProxyUrl"]})
    if rest == ["last-activity"]:
        fake.touch(box)
        return send_json(h, 200, {})
    if rest[:1] == ["autostop"]:
        box["autoStopInterval"] = int(rest[1])
        fake.touch(box)
        return send_json(h, 200, fake.dto(box))
    if rest[:1] == ["autodelete"]:
        box["autoDeleteInterval"] = int(rest[1])
        return send_json(h, 200, fake.dto(box))
    if rest in (["stop"], ["start"]) and method == "POST":
        fake.stop_or_start(box, start=rest == ["start"])
        return send_json(h, 200, fake.dto(box))
    if rest[:1] == ["ttl"]:
        box["ttlMinutes"], box["_created"] = int(rest[1]), time.time()  # set_ttl counts from now
        return send_json(h, 200, fake.dto(box))
    if rest == ["labels"] and method == "PUT":
        box["labels"] = dict((body or {}).get("labels") or {})
        return send_json(h, 200, {"labels": box["labels"]})
    if rest[:1] == ["ports"] and rest[2:] == ["signed-preview-url"] and method == "GET":
        return send_json(h, 200, signed_preview(box, int(rest[1]), query.get("expiresInSeconds")))
    if rest == ["snapshot"] and method == "POST":
        take(fake, box, (body or {}).get("name") or "")
        return send_json(h, 200, fake.dto(box))
    return send_error(h, 404, f"not modelled by the fake: {method} {h.path}")


def _toolbox(
    fake: DaytonaFake,
    h: BaseHTTPRequestHandler,
    method: str,
    sandbox_id: str,
    parts: list[str],
    query: dict[str, str],
) -> None:
    box = fake.find(sandbox_id)
    if box is None:
        read_body(h)
        return send_error(h, 404, f"Sandbox {sandbox_id} not found")
    if box["state"] != "started":
        read_body(h)
        return send_error(h, 409, f"Sandbox {sandbox_id} is {box['state']}, not started")
    fake.touch(box)  # a toolbox call is activity; what runs inside the sandbox is not
    container = box["_container"]
    if parts == ["process", "execute"] and method == "POST":
        req = read_json(h)
        cwd = _abs(req["cwd"]) if req.get("cwd") else None
        if cwd and not _sandboxes.is_dir(container, cwd):
            return send_error(h, 400, f"cwd {cwd} does not exist")
        timeout = req.get("timeout") or _DEFAULT_EXEC_TIMEOUT_S
        code, output, timed_out = _sandboxes.exec_merged(
            container, req["command"], cwd, req.get("envs") or {}, timeout
        )
        fake.touch(box)
        if fake.lost_exec_answers:
            lost = fake.lost_exec_answers.pop(0)
            if lost:
                return send_error(h, lost, f"injected {lost} after the command ran")
            h.close_connection = True
            h.connection.shutdown(socket.SHUT_RDWR)
            return None
        if timed_out:
            return send_error(h, 408, "command execution timeout", code="PROCESS_EXECUTION_TIMEOUT")
        return send_json(h, 200, {"exitCode": code, "result": output.decode("utf-8", "replace")})
    if parts == ["files", "bulk-upload"] and method == "POST":
        body = read_body(h)
        paths: dict[str, str] = {}
        for name, filename, data in multipart_fields(h.headers.get("Content-Type", ""), body):
            if name.endswith(".path"):
                paths[name[: -len(".path")]] = data.decode()
            elif name.endswith(".file"):
                target = paths.get(name[: -len(".file")]) or filename or ""
                cut = fake.cut_uploads_at
                error = _sandboxes.write(container, _abs(target), data if cut is None else data[:cut])
                if cut is not None and len(data) > cut:
                    error = f"{_abs(target)}: write: unexpected EOF"
                if error:
                    return send_error(h, 400, error)
        return send_json(h, 200, {})
    if parts == ["files", "bulk-download"] and method == "POST":
        return _download(h, container, list(read_json(h).get("paths") or []))
    if parts[:1] == ["files"] and parts[1:] in ([], ["info"]) and method in ("DELETE", "GET"):
        read_body(h)
        return _file_route(h, method, container, parts[1:], query)
    if parts[:2] == ["process", "pty"] and len(parts) >= 3:
        return _pty_route(fake, h, method, container, parts[2:], query)
    read_body(h)
    return send_error(h, 404, f"not modelled by the fake: {method} {h.path}")


def _file_route(
    h: BaseHTTPRequestHandler, method: str, container: str, rest: list[str], query: dict[str, str]
) -> None:
    """``DELETE /files?path=&recursive=`` (204) and ``GET /files/info?path=`` (a ``FileInfo``), done
    inside the container as the daemon's DeleteFile and GetFileInfo do (``_sandboxes``), on the
    path as sent (a relative one from the working dir; ``..`` resolved by the kernel, as Go's
    ``os`` calls leave it)."""
    path = query.get("path", "")
    if not path:
        return send_error(h, 400, "path is required")
    if method == "DELETE":
        code, said = _sandboxes.delete(container, path, query.get("recursive") == "true")
    elif rest == ["info"]:
        code, said = _sandboxes.file_info(container, path)
        if code == 0:  # Go's FileInfo.Name(): the last element of the path as given
            return send_json(h, 200, _file_info(posixpath.basename(path.rstrip("/")) or "/", said))
    else:
        return send_error(h, 404, f"not modelled by the fake: {method} {h.path}")
    if code == 0:
        h.send_response(204)
        h.end_headers()
        return None
    if code in _sandboxes.ANSWERS:
        status, error = _sandboxes.ANSWERS[code]
        # GetFileInfo aborts with a bare status; DeleteFile answers with the daemon's error codes
        return send_error(h, status, f"{path}: {said or error}", code=error if method == "DELETE" else None)
    return send_error(h, 400, said or "cannot delete directory without recursive flag")


def _file_info(name: str, stat_out: str) -> dict[str, Any]:
    """The daemon's ``FileInfo`` JSON from ``stat -L`` (``_sandboxes.file_info``); ``mode`` as Go's
    ``FileMode.String`` (ls-style for files and directories), times as Go prints them."""
    import stat

    raw, size, uid, gid, mtime = stat_out.split()
    mode = int(raw, 16)
    seconds, _, nanos = mtime.partition(".")
    at = time.gmtime(int(seconds))
    return {
        "name": name,
        "size": int(size),
        "mode": stat.filemode(mode),
        "modTime": time.strftime(f"%Y-%m-%d %H:%M:%S.{nanos} +0000 UTC", at),
        "modifiedAt": time.strftime(f"%Y-%m-%dT%H:%M:%S.{nanos}Z", at),
        "isDir": stat.S_ISDIR(mode),
        "owner": uid,
        "group": gid,
        "permissions": f"{stat.S_IMODE(mode):04o}",
    }


def _pty_route(
    fake: DaytonaFake,
    h: BaseHTTPRequestHandler,
    method: str,
    container: str,
    rest: list[str],
    query: dict[str, str],
) -> None:
    """``create-connect`` (WebSocket), ``{id}/resize`` and ``DELETE {id}``; see ``_pty``."""
    if rest == ["create-connect"] and method == "GET":
        cwd = _abs(query.get("cwd") or ".")
        if not _sandboxes.is_dir(container, cwd):  # the daemon's shell fails to start there
            return send_error(h, 500, "failed to start PTY session")
        return fake.ptys.connect(h, container, query, cwd)
    if len(rest) == 2 and rest[1] == "resize" and method == "POST":
        size = read_json(h)
        found = fake.ptys.resize(container, rest[0], int(size["cols"]), int(size["rows"]))
        return send_json(h, 200, found) if found else send_error(h, 404, f"PTY session {rest[0]} not found")
    read_body(h)
    if len(rest) == 1 and method == "DELETE":
        if not fake.ptys.kill(container, rest[0]):
            return send_error(h, 404, f"PTY session {rest[0]} not found")
        return send_json(h, 200, {})
    return send_error(h, 404, f"not modelled by the fake: {method} {h.path}")


def _download(h: BaseHTTPRequestHandler, container: str, paths: list[str]) -> None:
    """A multipart answer, streamed in chunks: a ``file`` part per file, an ``error`` part (JSON)
    per path that is missing or a directory."""
    boundary = uuid.uuid4().hex
    h.send_response(200)
    h.send_header("Content-Type", f"multipart/form-data; boundary={boundary}")
    h.send_header("Transfer-Encoding", "chunked")
    h.end_headers()

    def chunk(data: bytes) -> None:
        if data:
            h.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")

    with _sandboxes.read(container, [_abs(p) for p in paths]) as proc:  # closes its pipes
        assert proc.stdout is not None
        for path in paths:
            kind = proc.stdout.readline().strip()
            if kind.startswith(b"F"):
                chunk(part_header(boundary, "file", path, "application/octet-stream"))
                left = int(kind[1:])
                while left and (data := proc.stdout.read(min(left, 1 << 16))):
                    chunk(data)
                    left -= len(data)
                chunk(b"\r\n")
            else:
                message = "is a directory" if kind == b"D" else "file not found"
                error = {
                    "message": f"{path}: {message}",
                    "statusCode": 400 if kind == b"D" else 404,
                    "code": "FILE_NOT_FOUND" if kind != b"D" else "BAD_REQUEST",
                    "source": "DAYTONA_DAEMON",
                }
                chunk(
                    part_header(boundary, "error", path, "application/json")
                    + json.dumps(error).encode()
                    + b"\r\n"
                )
    chunk(f"--{boundary}--\r\n".encode())
    h.wfile.write(b"0\r\n\r\n")


def _abs(path: str) -> str:
    return posixpath.normpath(posixpath.join(_sandboxes.WORKDIR, path))


_ = Any
