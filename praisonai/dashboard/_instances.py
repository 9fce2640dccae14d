"""The instances page's routes: what ``compute ps`` knows, live, and stopping instances.

One :class:`Survey` per app surveys (``inventory.ps``, in a worker thread) every
:data:`SURVEY_EVERY_S` while at least one page listens, and each listener receives the snapshot
whenever it changed (a duration's text included, so the page's ages move with the survey): ten
open tabs cost one survey, and nothing is surveyed when none is open.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
from sse_starlette import EventSourceResponse
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

from praisonai._times import duration
from praisonai.compute import inventory
from praisonai.compute.inventory import StopOutcome

#: How often the instances are surveyed while a page listens.
SURVEY_EVERY_S = 2.0


#: A row's durations in seconds, which move all the time: a snapshot is news when anything else
#: changed, the durations' text (what the page shows) included.
_MOVING = ("age_s", "idle_s", "ttl_left_s")


def snapshot() -> dict[str, Any]:
    """Every instance as ``compute ps --json`` shows it, the problems ``ps`` reports, and when
    (``at``). Each row also carries its durations as the text ``compute ps`` prints (``age``,
    ``idle``, ``ttl_left``; ``ttl_left`` is empty when the instance has no ttl): the page shows
    that text and formats nothing itself."""
    survey = inventory.ps()
    now = time.time()
    rows = [_with_text(found.as_json(now)) for found in survey.instances]
    return {"at": now, "instances": rows, "problems": list(survey.problems)}


def _with_text(row: dict[str, Any]) -> dict[str, Any]:
    ttl_left = row["ttl_left_s"]
    return {
        **row,
        "age": duration(row["age_s"]),
        "idle": duration(row["idle_s"]),
        "ttl_left": "" if ttl_left is None else duration(ttl_left),
    }


def _news(document: dict[str, Any]) -> str:
    """What tells one snapshot from another: all but the time and the durations in seconds."""
    rows = [{k: v for k, v in row.items() if k not in _MOVING} for row in document["instances"]]
    return json.dumps([rows, document["problems"]], sort_keys=True)


class Survey:
    """The shared survey loop; :meth:`updates` yields each changed snapshot as JSON text."""

    def __init__(self, every_s: float = SURVEY_EVERY_S) -> None:
        self.every_s = every_s
        self._latest = ""
        self._news = ""
        self._version = 0
        self._changed = asyncio.Condition()
        self._listeners = 0
        self._again = asyncio.Event()
        self._loop: asyncio.Task[None] | None = None

    async def updates(self) -> AsyncIterator[str]:
        """The current snapshot, then each one that differs, until the listener goes away."""
        self._listeners += 1
        if self._loop is None or self._loop.done():
            self._loop = asyncio.ensure_future(self._survey())
        seen = 0
        try:
            while True:
                async with self._changed:
                    while self._version == seen:
                        await self._changed.wait()
                    seen, text = self._version, self._latest
                yield text
        finally:
            self._listeners -= 1

    def again(self) -> None:
        """Survey now (an instance was stopped here), not at the next tick."""
        self._again.set()

    async def _survey(self) -> None:
        while self._listeners > 0:
            self._again.clear()
            try:
                document = await anyio.to_thread.run_sync(snapshot)
            except Exception as exc:  # the home cannot be read, say: the page shows why, and waits
                document = {"at": time.time(), "instances": [], "problems": [str(exc)]}
            news = _news(document)
            if news != self._news:
                async with self._changed:
                    self._latest, self._news, self._version = json.dumps(document), news, self._version + 1
                    self._changed.notify_all()
            with anyio.move_on_after(self.every_s):
                await self._again.wait()

    async def close(self) -> None:
        if self._loop is not None:
            self._loop.cancel()
            await asyncio.gather(self._loop, return_exceptions=True)


async def _list(request: Request) -> JSONResponse:
    return JSONResponse(await anyio.to_thread.run_sync(snapshot))


async def _events(request: Request) -> EventSourceResponse:
    survey: Survey = request.app.state.survey

    async def events() -> AsyncIterator[dict[str, str]]:
        async for text in survey.updates():
            yield {"event": "instances", "data": text}

    return EventSourceResponse(events())


async def _stop(request: Request) -> Response:
    instance_id = request.path_params["instance_id"]
    return await _stopped(request, await anyio.to_thread.run_sync(inventory.stop, [instance_id]))


async def _stop_definition(request: Request) -> Response:
    """Every instance of one definition, as a fresh survey finds them."""
    definition = request.path_params["definition"]
    survey = await anyio.to_thread.run_sync(inventory.ps)
    ids = [found.instance_id for found in survey.instances if definition and found.definition == definition]
    if not ids:
        return PlainTextResponse(f"no instance of definition {definition!r} is running", status_code=404)
    return await _stopped(request, await anyio.to_thread.run_sync(inventory.stop, ids))


async def _stopped(request: Request, outcome: StopOutcome) -> Response:
    """The ids stopped, or (409) one line per instance that could not be."""
    request.app.state.survey.again()
    if not outcome.ok:
        lines = [f"could not stop {t.instance_id}: {error}" for t, error in outcome.failed]
        lines += [f"no instance {i!r} in the ledger or in any provider's list" for i in outcome.unknown]
        return PlainTextResponse("\n".join(lines + list(outcome.problems)), status_code=409)
    return JSONResponse(outcome.as_json())


ROUTES: list[BaseRoute] = [
    Route("/api/instances", _list),
    Route("/api/instances/events", _events),
    Route("/api/instances/{instance_id}/stop", _stop, methods=["POST"]),
    Route("/api/definitions/{definition}/stop", _stop_definition, methods=["POST"]),
]
