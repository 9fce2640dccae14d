"""Sessions and their events as the fake serves them: create (an agent pinned at a version, an
environment, title, metadata), retrieve, update, list, archive, delete (a second delete is a 404),
events send and list. The stream itself is the server's (it writes the frames).

Not thread-safe on its own: the server calls it under its one lock.
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Final

from fakes.managed_agents._live import LiveSession
from fakes.managed_agents._resources import Registry
from fakes.managed_agents._script import Step, hosted_by_client
from fakes.managed_agents._wire import (
    ApiError,
    Clock,
    Ids,
    Json,
    Query,
    not_found,
    page,
    parse_time,
    required,
)

#: A script for every new session: its steps, or a function of the new session's JSON giving them.
Script = Sequence[Step] | Callable[[Json], Sequence[Step]]

_SNAPSHOT: Final = (
    "id",
    "type",
    "version",
    "name",
    "description",
    "model",
    "system",
    "tools",
    "mcp_servers",
    "skills",
    "multiagent",
    "execution_identity",
)
_OVERRIDABLE: Final = ("model", "system", "tools", "mcp_servers", "skills")
_RANGE: Final[dict[str, Callable[[datetime, datetime], bool]]] = {
    "gt": operator.gt,
    "gte": operator.ge,
    "lt": operator.lt,
    "lte": operator.le,
}


class Sessions:
    """Every session of one fake: the live ones, and the deleted ones until their workers are joined."""

    def __init__(
        self, registry: Registry, ids: Ids, clock: Clock, lock: threading.Condition, script: Script
    ) -> None:
        self._registry, self._ids, self._clock, self._lock = registry, ids, clock, lock
        self.script = script
        self.live: dict[str, LiveSession] = {}
        self.self_hosted: set[str] = set()  # sessions whose built-in tools the client runs
        self.ended: list[LiveSession] = []  # deleted: their workers are joined when the fake closes

    def create(self, body: Json) -> Json:
        """``POST /v1/sessions``. ``agent`` is an id (its latest version), ``{type: agent, id,
        version?}`` or ``{type: agent_with_overrides, …}``; an archived agent is refused (400)."""
        required(body, "agent", "environment_id")
        ref = body["agent"] if isinstance(body["agent"], dict) else {"type": "agent", "id": body["agent"]}
        agent = self._registry.agent(str(ref.get("id")), ref.get("version"))
        if agent["archived_at"] is not None:
            raise ApiError(400, f"agent {agent['id']!r} is archived")
        env = self._registry.environment(str(body["environment_id"]))
        if env["archived_at"] is not None:
            raise ApiError(400, f"environment {env['id']!r} is archived")
        snapshot = {k: agent[k] for k in _SNAPSHOT}
        if ref.get("type") == "agent_with_overrides":
            snapshot.update({k: ref[k] for k in _OVERRIDABLE if k in ref})
        now = self._clock.now()
        obj: Json = {
            "id": self._ids.new("sesn"),
            "type": "session",
            "agent": snapshot,
            "environment_id": env["id"],
            "title": body.get("title"),
            "metadata": dict(body.get("metadata") or {}),
            "resources": list(body.get("resources") or []),
            "vault_ids": list(body.get("vault_ids") or []),
            "budget": body.get("budget"),
            "outcome_evaluations": [],
            "deployment_id": None,
            "status": "idle",
            "stats": {"active_seconds": None, "duration_seconds": None},
            "created_at": now,
            "updated_at": now,
            "archived_at": None,
        }
        steps = self.script(obj) if callable(self.script) else self.script
        if env["config"]["type"] == "self_hosted":
            self.self_hosted.add(obj["id"])
        session = LiveSession(obj, self._steps(obj["id"], steps), self._ids, self._clock, self._lock)
        self.live[obj["id"]] = session
        if body.get("initial_events"):
            session.send(list(body["initial_events"]))
        return session.public()

    def get(self, session_id: str) -> LiveSession:
        session = self.live.get(session_id)
        if session is None:
            raise not_found("session", session_id)
        return session

    def set_script(self, session_id: str, steps: Sequence[Step]) -> None:
        """Replace one session's script (before its first event is sent)."""
        self.get(session_id).set_script(self._steps(session_id, steps))

    def _steps(self, session_id: str, steps: Sequence[Step]) -> list[Step]:
        """A self-hosted session's built-in calls wait for the client's ``user.tool_result``."""
        return hosted_by_client(steps) if session_id in self.self_hosted else list(steps)

    def update(self, session_id: str, body: Json) -> Json:
        """``POST /v1/sessions/{id}``: title, metadata (a patch), budget, the agent's tools and MCP
        servers (not while running: 409); emits ``session.updated``."""
        session = self.get(session_id)
        obj = session.obj
        if "agent" in body:
            if obj["status"] == "running":
                raise ApiError(409, f"session {session_id!r} is running")
            obj["agent"].update(
                {k: v for k, v in (body["agent"] or {}).items() if k in ("tools", "mcp_servers")}
            )
        for key in ("title", "budget"):
            if key in body:
                obj[key] = body[key]
        metadata = {**obj["metadata"], **(body.get("metadata") or {})}
        obj["metadata"] = {k: v for k, v in metadata.items() if v is not None}
        session.emit({"type": "session.updated"})
        return session.public()

    def list(self, query: Query) -> Json:
        """``GET /v1/sessions``: newest first unless ``order=asc``; filters by agent, version, status."""
        shown = [s.public() for s in self.live.values()]
        if not query.flag("include_archived"):
            shown = [s for s in shown if s["archived_at"] is None]
        if (agent_id := query.get("agent_id")) is not None:
            shown = [s for s in shown if s["agent"]["id"] == agent_id]
        if (version := query.get("agent_version")) is not None:
            shown = [s for s in shown if str(s["agent"]["version"]) == version]
        if statuses := query.many("statuses"):
            shown = [s for s in shown if s["status"] in statuses]
        shown = _in_range(shown, "created_at", query)
        shown.sort(key=lambda s: str(s["created_at"]), reverse=query.get("order") != "asc")
        return page(shown, query, 20, 100)

    def archive(self, session_id: str) -> Json:
        """``POST /v1/sessions/{id}/archive``: read-only from then on (no event records it)."""
        session = self.get(session_id)
        if session.obj["archived_at"] is None:
            session.obj["archived_at"] = session.obj["updated_at"] = self._clock.now()
        return session.public()

    def delete(self, session_id: str) -> Json:
        """``DELETE /v1/sessions/{id}``: gone with its events; open streams get ``session.deleted``
        and end; a second delete is a 404."""
        session = self.get(session_id)
        del self.live[session_id]
        session.close(
            {"type": "session.deleted", "id": self._ids.new("sevt"), "processed_at": self._clock.now()}
        )
        self.ended.append(session)
        return {"id": session_id, "type": "session_deleted"}

    def send(self, session_id: str, body: Json) -> Json:
        """``POST /v1/sessions/{id}/events``: ``{data: [each event echoed with its id]}``."""
        events = body.get("events")
        if not isinstance(events, list) or not events or not all(isinstance(e, dict) for e in events):
            raise ApiError(400, "events: expected a non-empty list of events")
        session = self.get(session_id)
        if session_id not in self.self_hosted and any(e.get("type") == "user.tool_result" for e in events):
            raise ApiError(400, "user.tool_result is only accepted for sessions in a self_hosted environment")
        return {"data": session.send(events)}

    def list_events(self, session_id: str, query: Query) -> Json:
        """``GET /v1/sessions/{id}/events``: the log (no deltas), oldest first unless ``order=desc``,
        filtered by ``types[]`` and ``created_at[gt|gte|lt|lte]`` (against ``processed_at``)."""
        events = list(self.get(session_id).log)
        if types := query.many("types"):
            events = [e for e in events if e["type"] in types]
        events = _in_range(events, "processed_at", query)
        if query.get("order") == "desc":
            events.reverse()
        return page(events, query, 1000, 1000)


def _in_range(items: list[Json], key: str, query: Query) -> list[Json]:
    """``items`` whose ``key`` timestamp passes every ``created_at[op]`` bound in ``query``."""
    for op, passes in _RANGE.items():
        bound = query.get(f"created_at[{op}]")
        if bound is not None:
            limit = parse_time(bound)
            items = [i for i in items if passes(parse_time(str(i[key])), limit)]
    return items
