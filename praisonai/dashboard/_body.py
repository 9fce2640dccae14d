"""Reading a request's body in a route: bounded, and one sentence when it is not what the route
takes. A body past its limit is refused from its ``Content-Length`` before a byte of it is read,
or, sent without one, as soon as it grows past the limit: never read whole first."""

from __future__ import annotations

import json
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request

#: The largest JSON body a route reads (a resumed session's prompt is the largest there is).
JSON_MAX_BYTES = 4 * 1024 * 1024


async def read_body(request: Request, limit: int, too_large: str) -> bytes:
    """The body, whole, if it is at most ``limit`` bytes; else a 413 saying ``too_large``.

    Raises:
        HTTPException: 413 past the limit; 400 when the client left before the body's end.
    """
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise HTTPException(413, too_large)
    body = bytearray()
    try:
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                raise HTTPException(413, too_large)
    except ClientDisconnect:
        raise HTTPException(400, "the request ended before its body did") from None
    return bytes(body)


async def read_json_object(request: Request, example: str) -> dict[str, Any]:
    """The body as a JSON object (at most :data:`JSON_MAX_BYTES`); else a 400 or 413 sentence
    showing ``example``, the object the route takes.

    Raises:
        HTTPException: 400 for a body that is not a JSON object, 413 for one too large.
    """
    limit = f"{JSON_MAX_BYTES // (1 << 20)} MiB"
    raw = await read_body(request, JSON_MAX_BYTES, f"the request's body is over {limit}; send less")
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):  # not UTF-8 (a ValueError too), not JSON, nested too deep
        value = None
    if not isinstance(value, dict):
        raise HTTPException(400, f"the request's body must be a JSON object, such as {example}")
    return value
