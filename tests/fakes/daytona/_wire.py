"""HTTP plumbing for the Daytona fake: request bodies (chunked or sized), multipart in and out."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any


def read_body(handler: BaseHTTPRequestHandler) -> bytes:
    """The request body, whether it came with a Content-Length or chunked (aiohttp's form data)."""
    if handler.headers.get("Transfer-Encoding", "").lower() == "chunked":
        parts: list[bytes] = []
        while True:
            size = int(handler.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while handler.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass
                return b"".join(parts)
            parts.append(handler.rfile.read(size))
            handler.rfile.readline()
    length = int(handler.headers.get("Content-Length") or 0)
    return handler.rfile.read(length) if length else b""


def read_json(handler: BaseHTTPRequestHandler) -> Any:
    body = read_body(handler)
    return json.loads(body) if body else {}


def multipart_fields(content_type: str, body: bytes) -> Iterator[tuple[str, str | None, bytes]]:
    """``(name, filename, data)`` of each part of a multipart/form-data body."""
    found = re.search(r'boundary="?([^";]+)"?', content_type)
    if not found:
        raise ValueError("multipart body without a boundary")
    delimiter = b"--" + found.group(1).encode()
    for part in body.split(delimiter)[1:]:
        if part.startswith(b"--"):
            return
        head, _, data = part[2:].partition(b"\r\n\r\n")
        if data.endswith(b"\r\n"):
            data = data[:-2]
        disposition = next(
            (
                line
                for line in head.decode("utf-8", "replace").split("\r\n")
                if line.lower().startswith("content-disposition")
            ),
            "",
        )
        name = re.search(r'\bname="([^"]*)"', disposition)
        filename = re.search(r'\bfilename="([^"]*)"', disposition)
        yield (name.group(1) if name else "", filename.group(1) if filename else None, data)


def part_header(boundary: str, name: str, filename: str, content_type: str) -> bytes:
    """The opening of one multipart part (the filename is percent-encoded as RFC 5987 says)."""
    from urllib.parse import quote

    return (
        f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; '
        f"filename*=utf-8''{quote(filename, safe='')}\r\nContent-Type: {content_type}\r\n\r\n"
    ).encode()


def send_json(
    handler: BaseHTTPRequestHandler, status: int, payload: Any, headers: dict[str, str] | None = None
) -> None:
    body = json.dumps(payload).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    for key, value in (headers or {}).items():
        handler.send_header(key, value)
    handler.end_headers()
    handler.wfile.write(body)


def send_error(
    handler: BaseHTTPRequestHandler,
    status: int,
    message: str,
    code: str | None = None,
    headers: dict[str, str] | None = None,
) -> None:
    """An error in Daytona's envelope (``message``, ``statusCode``, ``code``), which the SDK maps."""
    payload: dict[str, Any] = {"statusCode": status, "message": message, "error": message}
    if code:
        payload["code"] = code
        payload["source"] = "DAYTONA_DAEMON"  # the SDK maps (source, code) to its precise subclass
    send_json(handler, status, payload, headers)
