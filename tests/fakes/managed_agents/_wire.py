"""The Managed Agents API's wire conventions, as the fake answers them: the error envelope, ids,
timestamps, list pages and the bracketed query strings the ``anthropic`` SDK sends.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import threading
from collections.abc import Sequence
from typing import Any, Final
from urllib.parse import parse_qsl

Json = dict[str, Any]

#: The beta every Managed Agents call carries in ``anthropic-beta`` (the SDK adds it itself).
BETA: Final = "managed-agents-2026-04-01"

#: The error ``type`` the API puts in its envelope for each status.
_ERROR_TYPES: Final = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    409: "invalid_request_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


class ApiError(Exception):
    """An HTTP error answer: ``status``, the envelope's ``error.type`` and ``message``, extra headers."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}

    @property
    def error_type(self) -> str:
        return _ERROR_TYPES.get(self.status, "api_error")

    def body(self, request_id: str) -> Json:
        """The API's error envelope, which the SDK reads ``error.type`` and ``error.message`` from."""
        error = {"type": self.error_type, "message": self.message}
        return {"type": "error", "error": error, "request_id": request_id}


def not_found(kind: str, ident: str) -> ApiError:
    return ApiError(404, f"{kind} {ident!r} not found")


class Ids:
    """Ids with the API's prefixes (``agent_``, ``env_``, ``sesn_``, ``sevt_``, ``req_``), unique
    across every fake of the process, as the API's are everywhere (a client talking to two fakes,
    as to two workspaces, never sees one id twice)."""

    _count = itertools.count(1)
    _lock = threading.Lock()

    def new(self, prefix: str) -> str:
        with Ids._lock:
            return f"{prefix}_fake{next(Ids._count):06d}"


class Clock:
    """Wall-clock timestamps, strictly increasing (a microsecond apart at least), so that
    ``processed_at`` orders events and ``created_at[gt]`` filters are exact."""

    def __init__(self) -> None:
        self._last = dt.datetime.min.replace(tzinfo=dt.timezone.utc)
        self._lock = threading.Lock()

    def now(self) -> str:
        with self._lock:
            now = dt.datetime.now(dt.timezone.utc)
            self._last = max(now, self._last + dt.timedelta(microseconds=1))
            return stamp(self._last)


def stamp(moment: dt.datetime) -> str:
    """``2026-04-01T12:00:00.000001Z``: fixed width, so these strings sort as the moments do."""
    return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(text: str) -> dt.datetime:
    """A timestamp as a client sends it in a filter (the SDK sends ``datetime.isoformat()``)."""
    try:
        moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise ApiError(400, f"invalid timestamp {text!r}") from exc
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.timezone.utc)


class Query:
    """A query string as the SDK encodes it: ``types[]=a&types[]=b`` lists, ``created_at[gt]=…``
    ranges, ``true``/``false`` booleans."""

    def __init__(self, raw: str) -> None:
        self.pairs = parse_qsl(raw, keep_blank_values=True)

    def get(self, key: str) -> str | None:
        return next((v for k, v in self.pairs if k == key), None)

    def many(self, key: str) -> list[str]:
        return [v for k, v in self.pairs if k in (key, f"{key}[]")]

    def flag(self, key: str) -> bool:
        return self.get(key) == "true"

    def integer(self, key: str, default: int, highest: int) -> int:
        value = self.get(key)
        if value is None:
            return default
        if not value.isdigit() or not 1 <= int(value) <= highest:
            raise ApiError(400, f"{key}: expected an integer from 1 to {highest}, got {value!r}")
        return int(value)


def page(items: Sequence[Json], query: Query, default_limit: int, highest: int) -> Json:
    """One page of ``items`` (``limit``, the opaque ``page`` cursor): ``{data, next_page, prev_page}``."""
    limit = query.integer("limit", default_limit, highest)
    token = query.get("page") or "page_0"
    start = int(token.removeprefix("page_")) if token.removeprefix("page_").isdigit() else -1
    if not 0 <= start <= len(items):
        raise ApiError(400, f"invalid page cursor {token!r}")
    end = start + limit
    following = f"page_{end}" if end < len(items) else None
    preceding = f"page_{max(0, start - limit)}" if start > 0 else None
    return {"data": list(items[start:end]), "next_page": following, "prev_page": preceding}


def required(body: Json, *keys: str) -> None:
    """400 unless ``body`` has every key (and none of them null)."""
    missing = [k for k in keys if body.get(k) is None]
    if missing:
        raise ApiError(400, f"{', '.join(missing)}: field required")


def sse_frame(event: Json) -> bytes:
    """One server-sent event, named after the event's type as the API names them."""
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()
