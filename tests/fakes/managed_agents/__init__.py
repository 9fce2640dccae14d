"""A loopback fake of Claude Managed Agents (the ``managed-agents-2026-04-01`` beta) on 127.0.0.1,
for tests: the real ``anthropic`` client (2.16.0) talks to it through ``base_url``, and a script
per session plays the hosted agent. No network leaves the machine::

    with ManagedAgentsFake([say("hello", chunks=3), end_turn()]) as fake:
        client = Anthropic(base_url=fake.url, api_key="test-key")
        agent = client.beta.agents.create(name="a", model="claude-sonnet-4-6")
        ...
        fake.events(session.id)  # the session's log, as events.list returns it

What it models (the wire as the SDK sends and parses it, see ``managed-agents.md`` (a) and (b)):

- The beta header: a request without ``anthropic-beta: managed-agents-2026-04-01`` gets a 400 in the
  API's error envelope (``{"type": "error", "error": {"type", "message"}, "request_id"}``, plus a
  ``request-id`` header on every answer). With ``require_key`` a wrong key gets a 401. The
  ``?beta=true`` of 0.9x clients and any ``anthropic-version`` are accepted.
- Agents: create (version 1), retrieve (``?version=N``), update (a new version; lists replace,
  metadata patches; a stale ``version`` precondition is a 409), list (``include_archived``),
  versions, archive (permanent; no delete, as in the API: a test deletes one as the Console
  does, with :meth:`ManagedAgentsFake.delete_agent`). Tools echo with the toolsets'
  ``default_config`` filled in.
- Environments: create (cloud or self_hosted; networking ``unrestricted`` or ``limited``;
  packages per manager; 400 for another networking type or for packages under limited networking
  without ``allow_package_managers``; a duplicate name is a 409), retrieve, update, list, archive,
  delete (``environment_deleted``; a second delete is a 404).
- Sessions: create (agent by id, ``{type: agent, id, version}`` pinned, or with overrides; an
  archived agent or environment refused; title, metadata, ``initial_events``), retrieve (status,
  cumulative usage), update (emits ``session.updated``), list (newest first, filters by agent,
  version, ``statuses[]``, ``created_at[…]``), archive (sending afterwards: 409), delete
  (``session.deleted`` to open streams, which end; a second delete, and anything else on it: 404).
- Events: send (a list; each echoed with an ``sevt_`` id and ``processed_at``; an unknown type, or
  an answer naming no such tool call, is a 400; a terminated session is a 409), list (oldest first,
  ``types[]``, ``created_at[gt|gte|lt|lte]`` against ``processed_at``, ``limit``/``page``, no deltas),
  stream (SSE, each frame named after its event's type; live only, no replay; ``event_start`` and
  ``event_delta`` only for the types in ``event_deltas[]``, never in the log).
- The hosted agent, from a script (:mod:`._script`): messages with deltas and per-request usage
  spans, thinking, custom tool calls and confirmations with ``requires_action`` (partial answers
  re-emit the idle with the rest), built-in tool calls allowed or denied, ``session.error``
  retrying / exhausted / terminal, cumulative ``session.usage`` snapshots, any stop reason,
  arbitrary (unknown) events verbatim, interrupts, and a :func:`wait` a test releases.
- Self-hosted environments (``config: {type: self_hosted}``): the "server" does not execute a
  session's built-in tool calls there. An allowed (or confirmed) ``agent.tool_use`` leaves the
  session running until the client posts ``user.tool_result {tool_use_id, content, is_error}``
  (as the SDK's ``SessionToolRunner`` does), then the script goes on. ``user.tool_result`` is
  accepted only for sessions in a self_hosted environment (a 400 otherwise) and must name an
  ``agent.tool_use`` of the session.
- Faults: :meth:`ManagedAgentsFake.fail` (any status, ``retry-after``, before or after the request
  takes effect: a 5xx after a recorded send is what makes the SDK's retry duplicate a message, as
  the SDK sends no idempotency key), :meth:`ManagedAgentsFake.drop_stream` (a stream cut after N
  frames, without its final chunk), :meth:`ManagedAgentsFake.stall_stream` (a stream that goes quiet
  after N frames: keep-alive pings only, or nothing after its headers) and the script step
  :func:`raw_frame` (bytes written to the open streams as they are: not JSON, not UTF-8, 10 MB).

What it does not model: the model itself (only the script speaks); tool execution (results are
scripted, or the client's on self_hosted); rate limits, budgets and ``list_cost`` unless a test
injects them; threads and multi-agent sessions, outcomes, resources, vaults, skills, files, memory
stores, deployments; the self-hosted work queue (``environments.work``: no items are queued, and
its routes are 404s), the service's error result for a call no runner answers within 120 s, and
whether the real service waits for a claimed work item before it runs a self-hosted session;
webhooks; the exact wording of the API's error messages and the status for a missing beta header
(ours, not verbatim); validation beyond what is listed above (the SDK's own param checks, prefixes
of ids, field lengths); a 409 retried by the SDK (it retries 408/409/429/5xx twice by default:
tests that expect a 409 or 5xx pass ``max_retries=0``).
Whether a denied confirmation leads to an ``agent.tool_result`` is not documented: here it does not.

It lives in ``llm``, beside :mod:`praisonai.llm.testing` (the Messages API fake), because it is an
Anthropic wire: the layer rule lets the ``llm`` client code, the hosted backend in ``managed`` and the
CLI all use it, and it imports only the standard library (the SDK is the tests' side), so it needs
no import-linter exception.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Final

from fakes.managed_agents._live import Stream
from fakes.managed_agents._resources import Registry
from fakes.managed_agents._script import (
    Step,
    custom_tool,
    emit,
    end_turn,
    raw_frame,
    say,
    session_error,
    stop,
    think,
    tool,
    usage,
    wait,
)
from fakes.managed_agents._server import ROUTES, Fault, Request, Server, handler
from fakes.managed_agents._sessions import Script, Sessions
from fakes.managed_agents._wire import BETA, ApiError, Clock, Ids, Json, Query

__all__ = [
    "API_KEY",
    "BETA",
    "ManagedAgentsFake",
    "Request",
    "Script",
    "Step",
    "custom_tool",
    "emit",
    "end_turn",
    "raw_frame",
    "say",
    "session_error",
    "stop",
    "think",
    "tool",
    "usage",
    "wait",
]

API_KEY: Final = "test-key"
_DELTA_TYPES: Final = ("agent.message", "agent.thinking")


class ManagedAgentsFake:
    """The server; a context manager (``start()``/``close()`` otherwise). Thread-safe.

    ``script`` plays every new session (a list of steps, each session from its first; or a function
    of the new session's JSON giving its steps); :meth:`script_session` sets one session's.

    Attributes:
        requests: every request received, in arrival order.
    """

    def __init__(self, script: Script = (), *, require_key: str | None = None) -> None:
        self._lock = threading.Condition(threading.RLock())
        self._ids, self._clock = Ids(), Clock()
        self._registry = Registry(self._ids, self._clock)
        self._sessions = Sessions(self._registry, self._ids, self._clock, self._lock, script)
        self._faults: list[Fault] = []
        self._drops: list[tuple[int, str]] = []
        self._require_key = require_key
        self._closing = threading.Event()
        self.requests: list[Request] = []
        self._server = Server(handler(self))
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="managed-agents-fake", daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> ManagedAgentsFake:
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving: end every stream and session worker, join every thread this fake started."""
        self._closing.set()
        with self._lock:
            sessions = [*self._sessions.live.values(), *self._sessions.ended]
            for session in self._sessions.live.values():
                session.close()
        self._server.shutdown()
        self._server.cut_all()
        self._server.server_close()
        self._thread.join()
        for session in sessions:
            session.join()

    def __enter__(self) -> ManagedAgentsFake:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- faults ----------------------------------------------------------------------------------

    def fail(
        self,
        status: int,
        on: str = "events.send",
        *,
        after: bool = False,
        times: int = 1,
        retry_after: str | None = None,
        message: str = "injected by the fake",
    ) -> None:
        """Answer the next ``times`` requests to route ``on`` (a name from :data:`ROUTES`, or ``"*"``)
        with ``status`` in the API's error envelope, with a ``retry-after`` header when given.
        ``after``: the request takes effect first (an event is recorded, an agent created), as when
        the answer is lost on the way back."""
        if on != "*" and on not in {name for _, _, name in ROUTES}:
            raise ValueError(f"no route {on!r}")
        with self._lock:
            self._faults.append(Fault(status, on, after, times, retry_after, message))

    def drop_stream(self, after_frames: int, *, times: int = 1) -> None:
        """Cut the next ``times`` streams opened after writing ``after_frames`` frames (deltas count)."""
        with self._lock:
            self._drops += [(after_frames, "drop")] * times

    def stall_stream(self, after_frames: int = 0, *, pings: bool = True, times: int = 1) -> None:
        """The next ``times`` streams opened go quiet after ``after_frames`` frames (0: right after
        the headers), the connection left open: with ``pings`` they send only ``: ping`` keep-alive
        comments from then on, else nothing at all."""
        with self._lock:
            self._drops += [(after_frames, "pings" if pings else "silence")] * times

    def heal(self) -> None:
        """Drop every fault still to come (answers, cut or quiet streams)."""
        with self._lock:
            self._faults.clear()
            self._drops.clear()

    # ---- scripts and state, for tests ------------------------------------------------------------

    def set_script(self, script: Script) -> None:
        """The script of sessions created from now on."""
        with self._lock:
            self._sessions.script = script

    def script_session(self, session_id: str, steps: list[Step]) -> None:
        """Replace one session's script (before its first event is sent)."""
        with self._lock:
            self._sessions.set_script(session_id, steps)

    def release(self, session_id: str) -> None:
        """Let the session's :func:`wait` step go on."""
        with self._lock:
            self._sessions.get(session_id).release()

    def events(self, session_id: str) -> list[Json]:
        """The session's log (what ``events.list`` returns), oldest first."""
        with self._lock:
            return list(self._sessions.get(session_id).log)

    def session(self, session_id: str) -> Json:
        with self._lock:
            return self._sessions.get(session_id).public()

    def agents(self) -> list[Json]:
        """Every agent (its latest version), archived or not."""
        with self._lock:
            return [versions[-1] for versions in self._registry.agents.values()]

    def delete_agent(self, agent_id: str) -> None:
        """Delete an agent as the Console does (the API's ``agent.deleted`` webhook; the SDK has no
        such call): every version gone, its id a 404 from now on."""
        with self._lock:
            self._registry.agent(agent_id)
            del self._registry.agents[agent_id]

    def environments(self) -> list[Json]:
        with self._lock:
            return list(self._registry.environments.values())

    def session_ids(self) -> list[str]:
        """The sessions not deleted."""
        with self._lock:
            return list(self._sessions.live)

    def calls(self, route: str) -> list[Request]:
        """The requests made to ``route`` (retries included)."""
        with self._lock:
            return [r for r in self.requests if r.route == route]

    def wait_until(self, predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
        """Wait until ``predicate()`` (checked whenever an event is recorded); False on timeout."""
        with self._lock:
            return self._lock.wait_for(predicate, timeout)

    # ---- what the HTTP handler calls (_server.Backend) -------------------------------------------

    @property
    def require_key(self) -> str | None:
        return self._require_key

    @property
    def closing(self) -> threading.Event:
        return self._closing

    def record(self, request: Request) -> str:
        with self._lock:
            self.requests.append(request)
        return self._ids.new("req")

    def take_fault(self, route: str) -> Fault | None:
        with self._lock:
            for fault in self._faults:
                if fault.route in ("*", route):
                    fault.times -= 1
                    if fault.times <= 0:
                        self._faults.remove(fault)
                    return fault
        return None

    def dispatch(self, route: str, ident: str, query: Query, body: Json) -> Json:
        r, s = self._registry, self._sessions
        table: dict[str, Callable[[], Json]] = {
            "agents.create": lambda: r.create_agent(body),
            "agents.list": lambda: r.list_agents(query),
            "agents.retrieve": lambda: r.agent(ident, _version(query)),
            "agents.update": lambda: r.update_agent(ident, body),
            "agents.archive": lambda: r.archive_agent(ident),
            "agents.versions.list": lambda: r.agent_versions(ident, query),
            "environments.create": lambda: r.create_environment(body),
            "environments.list": lambda: r.list_environments(query),
            "environments.retrieve": lambda: r.environment(ident),
            "environments.update": lambda: r.update_environment(ident, body),
            "environments.delete": lambda: r.delete_environment(ident),
            "environments.archive": lambda: r.archive_environment(ident),
            "sessions.create": lambda: s.create(body),
            "sessions.list": lambda: s.list(query),
            "sessions.retrieve": lambda: s.get(ident).public(),
            "sessions.update": lambda: s.update(ident, body),
            "sessions.delete": lambda: s.delete(ident),
            "sessions.archive": lambda: s.archive(ident),
            "events.send": lambda: s.send(ident, body),
            "events.list": lambda: s.list_events(ident, query),
        }
        with self._lock:
            return table[route]()

    def open_stream(self, ident: str, query: Query) -> tuple[Stream, Callable[[], None]]:
        deltas = frozenset(query.many("event_deltas"))
        if not deltas <= set(_DELTA_TYPES):
            raise ApiError(400, f"event_deltas: expected some of {', '.join(_DELTA_TYPES)}")
        with self._lock:
            session = self._sessions.get(ident)
            stream = session.subscribe(deltas, *(self._drops.pop(0) if self._drops else (None,)))

        def done() -> None:
            with self._lock:
                session.unsubscribe(stream)

        return stream, done


def _version(query: Query) -> int | None:
    return query.integer("version", 0, 1 << 31) if query.get("version") is not None else None
