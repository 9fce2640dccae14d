"""The sessions pages' routes: the list, one session's timeline as it grows, resuming it and
forking it.

Everything is read from the sessions store of this home, through the library's JSON shapes
(``managed.sessions``: what ``sessions list --json`` and ``sessions show --json`` print). The
store is a local sqlite file, so each stream polls it (every :data:`POLL_S`) from a worker
thread; a timeline stream sends each stored event once, with its seq as the event's id, so a
reconnecting page (``Last-Event-ID``) picks up where it left off.

A resume runs the session's next turn as ``praisonai managed sessions resume ID PROMPT`` does
(``ManagedAgent.resume``, then ``run``), in a thread of its own (:class:`Turns`): the page follows
it on the timeline. Tool calls that need approval are left pending (the session then requires
action), since no one is asked here; the server's stop interrupts a running turn. A fork is
``praisonai managed sessions fork ID --at-turn K`` (``managed.fork.fork_session``): no model is
asked, and each row of the list names the session it was forked from and at which turn, so the
page draws the list as a tree of forks.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import threading
from collections.abc import AsyncIterator, Mapping
from typing import Any

import anyio
from sse_starlette import EventSourceResponse
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

from praisonai._errors import SessionBusyError
from praisonai._telemetry import logger
from praisonai._times import when
from praisonai.dashboard._body import read_json_object
from praisonai.managed import sessions
from praisonai.managed.agent import ManagedAgent
from praisonai.managed.fork import fork_session
from praisonai.managed.store import AgentRecord, SessionRecord, SessionStore, open_store
from praisonai.managed.text import check_prompt

_log = logger("dashboard")

#: How often a stream looks at the store for news.
POLL_S = 0.5
#: How long the server's stop waits for each interrupted turn to end (its instance's command
#: killed, its events stored).
STOP_WAIT_S = 30.0
#: The most sessions the list shows (newest updated first).
LISTED = 200


def _rows(store: SessionStore) -> list[dict[str, Any]]:
    """The library's rows, each with ``updated`` (the text ``sessions list`` prints for it) and
    ``forked_from``."""
    agents = {agent.id: agent for agent in store.list_agents()}
    return [
        {
            **sessions.session_row(r, agents.get(r.agent_id)),
            "updated": when(r.updated_at, short=True),
            "forked_from": forked_from(r),
        }
        for r in store.list_sessions(limit=LISTED)
    ]


def forked_from(record: SessionRecord) -> dict[str, Any] | None:
    """``{"session_id", "at_turn"}`` of the session this one was forked from (``managed.fork``
    records it in the metadata), else ``None``; so is an entry of another shape, since an agent's
    config writes metadata too."""
    found = record.metadata.get("forked_from")
    if not isinstance(found, Mapping):
        return None
    parent, turn = found.get("session_id"), found.get("at_turn")
    if not isinstance(parent, str) or isinstance(turn, bool) or not isinstance(turn, int):
        return None
    return {"session_id": parent, "at_turn": turn}


async def _list(request: Request) -> JSONResponse:
    def listed() -> list[dict[str, Any]]:
        with open_store() as store:
            return _rows(store)

    return JSONResponse({"sessions": await anyio.to_thread.run_sync(listed)})


async def _list_events(request: Request) -> EventSourceResponse:
    """The list whenever it changed, read from one store opened for the stream's life."""
    store = await anyio.to_thread.run_sync(open_store)

    async def events() -> AsyncIterator[dict[str, str]]:
        last = ""
        try:
            while True:
                text = json.dumps(await anyio.to_thread.run_sync(_rows, store))
                if text != last:
                    yield {"event": "sessions", "data": text}
                    last = text
                await anyio.sleep(POLL_S)
        finally:
            store.close()

    return EventSourceResponse(events())


async def _show(request: Request) -> JSONResponse:
    view = await anyio.to_thread.run_sync(sessions.show_session, request.path_params["session_id"])
    return JSONResponse(sessions.session_json(view, events=False))


async def _timeline(request: Request) -> EventSourceResponse:
    """``session`` events (the record, when it changed) and ``event`` events (each stored event
    after the page's last, its seq the SSE id)."""
    session_id = request.path_params["session_id"]
    resumed_from = request.headers.get("last-event-id", "")
    after = int(resumed_from) if resumed_from.isdigit() else 0
    store = await anyio.to_thread.run_sync(open_store)
    try:  # an unknown id: 404, no stream; a session's agent never changes, so it is read once
        record = await anyio.to_thread.run_sync(store.get_session, session_id)
        agent = await anyio.to_thread.run_sync(store.get_agent, record.agent_id)
    except BaseException:
        store.close()
        raise

    async def events() -> AsyncIterator[dict[str, str]]:
        seen, last = after, ""
        try:
            while True:
                shown, news = await anyio.to_thread.run_sync(_news, store, agent, session_id, seen)
                card = json.dumps(shown)
                if card != last:
                    yield {"event": "session", "data": card}
                    last = card
                for item in news:
                    seen = item["seq"]
                    yield {"event": "event", "id": str(seen), "data": json.dumps(item)}
                await anyio.sleep(POLL_S)
        finally:
            store.close()

    return EventSourceResponse(events())


def _news(
    store: SessionStore, agent: AgentRecord, session_id: str, after: int
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The session's card as it stands, and the events stored after ``after``."""
    view = sessions.SessionView(store.get_session(session_id), agent, (), ())
    events = [sessions.event_json(e) for e in store.events(session_id, after_seq=after)]
    return sessions.session_json(view, events=False), events


async def _resume(request: Request) -> Response:
    """Take the session and run its next turn in the background: 202 once it has started; one
    sentence when the prompt is not one or the session is busy (here or in another process)."""
    session_id = request.path_params["session_id"]
    body = await read_json_object(request, '{"prompt": "the next message"}')
    prompt = body.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        return PlainTextResponse("write the next message first: the prompt is empty", status_code=400)
    check_prompt(prompt)
    turns: Turns = request.app.state.turns
    await anyio.to_thread.run_sync(turns.start, session_id, prompt)
    return JSONResponse({"session": session_id, "resumed": True}, status_code=202)


async def _fork(request: Request) -> Response:
    """``{"at_turn": K | null, "title": null | T}``: a new session, this one's transcript to turn K
    (null: the last) and its instance from a snapshot then; 201 with what was made."""
    body = await read_json_object(request, '{"at_turn": 2, "title": "another way"}')
    title = body.get("title")
    if title is not None and not isinstance(title, str):
        raise HTTPException(400, f"the fork's title is text, not {type(title).__name__}")
    fork = functools.partial(fork_session, request.path_params["session_id"], body.get("at_turn"))
    result = await anyio.to_thread.run_sync(functools.partial(fork, title=title or None))
    request.app.state.survey.again()  # its instance, if it has one
    return JSONResponse(dataclasses.asdict(result), status_code=201)


class Turns:
    """The turns this dashboard runs, at most one per session: the store's lease keeps other
    processes out, but this process holds every lease it takes under one owner, so it keeps
    its own count. :meth:`stop` interrupts them (each session stays resumable)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: dict[str, tuple[ManagedAgent, threading.Thread] | None] = {}

    def start(self, session_id: str, prompt: str) -> None:
        """Resume the session here and start its turn in a thread of its own.

        Raises:
            SessionBusyError: a turn of it runs, here or in another live process.
            SessionNotFoundError: no such session.
        """
        with self._lock:
            if session_id in self._running:
                raise SessionBusyError(f"session {session_id} is running a turn; wait for it to end")
            self._running[session_id] = None  # taken: a second click waits for this one
        try:
            agent = ManagedAgent.resume(session_id)
        except BaseException:
            with self._lock:
                del self._running[session_id]
            raise
        thread = threading.Thread(target=self._turn, args=(session_id, agent, prompt), daemon=True)
        with self._lock:
            self._running[session_id] = (agent, thread)
        thread.start()

    def _turn(self, session_id: str, agent: ManagedAgent, prompt: str) -> None:
        """The turn, to its end; how it ended is in the session's record and events."""
        try:
            agent.run(prompt)
        except Exception as exc:  # the page shows the session's error; the server says it once
            _log.warning("the resumed turn of %s ended with an error: %s", session_id, exc)
        finally:
            agent.close()
            with self._lock:
                del self._running[session_id]

    def stop(self) -> None:
        """Interrupt every running turn and wait for each to end."""
        with self._lock:
            running = [entry for entry in self._running.values() if entry is not None]
        for agent, _ in running:
            agent.interrupt()
        for _, thread in running:
            thread.join(STOP_WAIT_S)


ROUTES: list[BaseRoute] = [
    Route("/api/sessions", _list),
    Route("/api/sessions/events", _list_events),
    Route("/api/sessions/{session_id}", _show),
    Route("/api/sessions/{session_id}/events", _timeline),
    Route("/api/sessions/{session_id}/resume", _resume, methods=["POST"]),
    Route("/api/sessions/{session_id}/fork", _fork, methods=["POST"]),
]
