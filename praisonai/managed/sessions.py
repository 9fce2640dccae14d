"""What ``praisonai managed sessions …`` and ``agents list`` do, as a library: the CLI prints these
results (the library never prints). Every function takes a ``store`` (default: the sqlite store of
the current ``PRAISONAI_HOME``, opened for the call and closed after it).

Deleting a session is four steps, each reported: take its lease (refused while a live process
drives it), remove the instance it recorded, then the snapshots it owns (its checkpoints, and the
one a fork started from: see :mod:`praisonai.managed.checkpoints`), then its rows, events and
usage. A hosted session
(``backend == "anthropic"``) has a step before the instance: its remote session is deleted (or
archived) through the API. A remote session or an instance already gone counts as removed; when
either cannot be removed the rows are kept, so that the session still names it and a second
delete can retry.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from praisonai import _portal
from praisonai._errors import (
    ConfigError,
    InstanceNotFoundError,
    PraisonAIError,
    SessionBusyError,
    SessionNotFoundError,
)
from praisonai._limits import DEFAULT_SESSIONS_LISTED
from praisonai.managed.store import (
    AgentRecord,
    SessionRecord,
    SessionStore,
    StoredEvent,
    TurnUsage,
    lease_holder,
    open_store,
)

#: The backend whose sessions live on Anthropic's Managed Agents API.
HOSTED = "anthropic"


@dataclass(frozen=True)
class SessionView:
    """A session with its agent, its whole transcript (by seq) and its usage per turn and model;
    ``remote`` is what the hosted backend recorded of its remote session (see :func:`remote_of`)."""

    record: SessionRecord
    agent: AgentRecord
    events: tuple[StoredEvent, ...]
    usage: tuple[TurnUsage, ...]

    @property
    def remote(self) -> Mapping[str, Any]:
        return remote_of(self.record)


def remote_of(record: SessionRecord) -> Mapping[str, Any]:
    """The hosted session's remote details as last recorded (empty for a local session):
    ``{"agent": {"id", "version"}, "environment_id", "status", "usage": <the API's cumulative
    snapshot: tokens, cache_creation, list_cost, active_seconds>, "stats": {…}}``."""
    return record.remote or {}


def session_row(record: SessionRecord, agent: AgentRecord | None) -> dict[str, Any]:
    """A session as one row of ``sessions list --json`` (and of the dashboard's list)."""
    return {
        "id": record.id,
        "agent_id": record.agent_id,
        "agent": agent.name if agent else None,
        "agent_version": record.agent_version,
        "model": agent.config.get("model") if agent else None,
        "title": record.title,
        "status": record.status,
        "stop_reason": stop_type(record),
        "pending": len(record.pending),
        "turns": record.turns,
        "usage": dict(record.usage),
        "sandbox": sandbox_of(record),
        "created_at": record.created_at,
        "updated_at": record.updated_at,
    }


def session_json(view: SessionView, *, events: bool) -> dict[str, Any]:
    """The session as one JSON object (``sessions show --json``, the dashboard's session page);
    with ``events``, its transcript (each with its seq and turn)."""
    s, agent = view.record, view.agent
    data: dict[str, Any] = {
        "id": s.id,
        "backend": s.backend,
        "remote_session_id": s.remote_session_id,
        "agent": {
            "id": s.agent_id,
            "name": agent.name,
            "version": s.agent_version,
            "model": agent.config.get("model"),
        },
        "title": s.title,
        "status": s.status,
        "stop_reason": _plain(s.stop_reason),
        "pending": _plain(list(s.pending)),
        "last_error": _plain(s.last_error),
        "turns": s.turns,
        "usage": dict(s.usage),
        "usage_by_turn": [dataclasses.asdict(t) for t in view.usage],
        "sandbox": {**sandbox_of(s), "status": s.sandbox_status} if s.sandbox else None,
        "remote": _plain(view.remote) or None,
        "lease_owner": s.lease_owner,
        "created_at": s.created_at,
        "updated_at": s.updated_at,
    }
    if events:
        data["events"] = [event_json(e) for e in view.events]
    return data


def event_json(stored: StoredEvent) -> dict[str, Any]:
    """One stored event as the transcript's JSON: its seq and turn, then the event itself."""
    return {"seq": stored.seq, "turn": stored.turn, **stored.event.to_json()}


def stop_type(record: SessionRecord) -> str | None:
    """How its last turn ended (``end_turn``, ``requires_action``…), ``None`` before any."""
    return str(record.stop_reason.get("type")) if record.stop_reason else None


def sandbox_of(s: SessionRecord) -> dict[str, Any]:
    """Provider and instance only: the recorded options may name hosts and users."""
    box = s.sandbox or {}
    return {"provider": box.get("provider"), "instance_id": box.get("instance_id")} if box else {}


def _plain(value: Any) -> Any:
    """Mappings and tuples as JSON's dicts and lists."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


@dataclass(frozen=True)
class Step:
    """One step of a delete: ``lease``, ``instance`` or ``rows``; whether it is done, and how."""

    name: str
    ok: bool
    detail: str


@dataclass(frozen=True)
class DeleteReport:
    """The steps of one delete, in order; ``ok`` only when every one of them is done."""

    session_id: str
    steps: tuple[Step, ...]

    @property
    def ok(self) -> bool:
        return all(step.ok for step in self.steps)


def list_sessions(
    store: SessionStore | None = None,
    *,
    agent: str | None = None,
    status: str | None = None,
    limit: int = DEFAULT_SESSIONS_LISTED,
) -> list[SessionRecord]:
    """Sessions, newest updated first. ``agent`` is an agent id (``magt_…``) or a name (all its
    versions). ``SessionNotFoundError`` for an agent that is not there; ``ConfigError`` for an
    unknown ``status`` or a ``limit`` below 1."""
    with _using(store) as opened:
        if agent is None or agent.startswith("magt_"):
            if agent is not None:
                opened.get_agent(agent)
            return opened.list_sessions(agent_id=agent, status=status, limit=limit)
        versions = [found.id for found in opened.list_agents() if found.name == agent]
        if not versions:
            raise SessionNotFoundError(f"no agent named {agent!r}")
        found = [r for v in versions for r in opened.list_sessions(agent_id=v, status=status, limit=limit)]
        return sorted(found, key=lambda record: (record.updated_at, record.id), reverse=True)[:limit]


def show_session(session_id: str, store: SessionStore | None = None) -> SessionView:
    """The session, its agent, transcript and usage. ``SessionNotFoundError`` when it is not there."""
    with _using(store) as opened:
        record = opened.get_session(session_id)
        return SessionView(
            record,
            opened.get_agent(record.agent_id),
            tuple(opened.events(session_id)),
            tuple(opened.turn_usage(session_id)),
        )


def list_agents(store: SessionStore | None = None, backend: str | None = None) -> list[AgentRecord]:
    """The stored agents (every version), by name then version."""
    with _using(store) as opened:
        return opened.list_agents(backend)


def delete_session(
    session_id: str,
    store: SessionStore | None = None,
    *,
    keep_instance: bool = False,
    archive: bool = False,
    keep_remote: bool = False,
) -> DeleteReport:
    """Remove a hosted session's remote session, then the instance, then the rows, events and
    usage; report each step.

    The remote session is deleted for good (its events, container and checkpoints), or with
    ``archive`` made read-only on the API; ``keep_remote`` leaves it as it is (when the API
    cannot be reached for good, say). ``keep_instance`` leaves the instance running
    (``praisonai compute stop`` removes it later) and its snapshots (``praisonai compute
    snapshots rm``). The report is not ``ok`` when the remote session, the instance or a snapshot
    could not be removed: the rows are then kept, to retry with.

    Raises:
        SessionNotFoundError: no session with that id (also when it was deleted already).
        SessionBusyError: a live process drives the session; nothing was changed.
        ConfigError: ``archive`` for a session that is not hosted, or with ``keep_remote``.
    """
    with _using(store) as opened:
        record = opened.get_session(session_id)
        if archive and (record.backend != HOSTED or keep_remote):
            raise ConfigError(
                f"{session_id} is a {record.backend} session: only hosted sessions archive"
                if record.backend != HOSTED
                else "archive the remote session or keep it, not both"
            )
        holder = lease_holder(record)
        if holder is not None:
            raise SessionBusyError(
                f"session {session_id} is in use by {holder}: stop that process, or wait for its turn "
                "to end, before deleting it"
            )
        from praisonai.compute.lifecycle import owner_tag  # the compute stack only when deleting

        lease = opened.acquire(session_id, owner_tag())  # fences off a writer that wakes up late
        steps = [Step("lease", True, f"took the lease (epoch {lease.epoch})")]
        if record.backend == HOSTED:
            left = Step("remote", True, f"left {record.remote_session_id} as it is (keep_remote)")
            steps.append(left if keep_remote else _remove_remote(record.remote_session_id, archive))
        if steps[-1].ok:
            steps.append(
                Step("instance", True, "kept (keep_instance)") if keep_instance else _shutdown(record.sandbox)
            )
        owned = [] if keep_instance or not steps[-1].ok else _owned_snapshots(opened, session_id)
        if owned:
            steps.append(_remove_snapshots(owned))
        if not steps[-1].ok:
            opened.release(lease)
            what = {"remote": "remote session", "instance": "instance"}.get(steps[-1].name, "snapshots")
            kept = f"kept, so that the session still names its {what}: delete again to retry"
            return DeleteReport(session_id, (*steps, Step("rows", False, kept)))
        removed = opened.delete_session(session_id)
        done = (
            f"removed the session, its {record.last_seq} events and its usage"
            if removed
            else "already removed"
        )
        return DeleteReport(session_id, (*steps, Step("rows", True, done)))


def _remove_remote(remote_id: str | None, archive: bool) -> Step:
    """Delete (or archive) the remote session through the API; one already gone counts as done."""
    if not remote_id:
        return Step("remote", True, "no remote session recorded")
    from praisonai.managed.hosted import admin as hosted_admin  # the SDK only when deleting a hosted session

    try:
        existed = hosted_admin.call(hosted_admin.delete_remote_session, remote_id, archive)
    except PraisonAIError as exc:
        return Step("remote", False, str(exc))
    if not existed:
        return Step("remote", True, f"{remote_id} was already gone")
    return Step("remote", True, f"{'archived' if archive else 'deleted'} {remote_id}")


def _owned_snapshots(store: SessionStore, session_id: str) -> list[str]:
    """The snapshots the session owns (its checkpoints, the one a fork started from: see
    :mod:`praisonai.managed.checkpoints`), removed after its instance."""
    from praisonai.managed import checkpoints  # the compute stack only when deleting

    return checkpoints.owned(store, store.events(session_id))


def _remove_snapshots(owned: list[str]) -> Step:
    from praisonai.managed import checkpoints

    ok, detail = _portal.call(checkpoints.remove, owned)
    return Step("snapshots", ok, detail)


def _shutdown(sandbox: Mapping[str, Any] | None) -> Step:
    """Remove the instance a session recorded (``{"provider", "options", "instance_id"}``),
    rebuilding its provider from the record; one that is gone already counts as removed."""
    if not sandbox or not sandbox.get("instance_id"):
        return Step("instance", True, "no instance recorded")
    instance_id = str(sandbox["instance_id"])
    if sandbox.get("owned") is False:  # attached to an instance the session did not make
        return Step("instance", True, f"left {instance_id} running: the session did not create it")
    from praisonai.compute.registry import provider_for_record  # loaded only when deleting

    try:
        provider = provider_for_record(str(sandbox.get("provider")), dict(sandbox.get("options") or {}))
        existed = _portal.call(provider.shutdown, instance_id)
    except InstanceNotFoundError:
        existed = False
    except PraisonAIError as exc:
        return Step("instance", False, f"could not remove {instance_id}: {exc}")
    return Step("instance", True, f"removed {instance_id}" if existed else f"{instance_id} was already gone")


@contextlib.contextmanager
def _using(store: SessionStore | None) -> Iterator[SessionStore]:
    """``store``, or the default store opened for the block and closed after it."""
    if store is not None:
        yield store
        return
    opened = open_store()
    try:
        yield opened
    finally:
        opened.close()


def session_diff(session_id: str, store: SessionStore | None = None) -> str:
    """What the session's agent changed in its workspace since the upload or clone, as a
    ``git diff`` patch (``praisonai managed diff``); see ``instance._diff.reference_diff``."""
    from praisonai.managed.instance._diff import reference_diff  # loaded only when asked

    with _using(store) as opened:
        record = opened.get_session(session_id)
    return _portal.call(reference_diff, record.sandbox, session_id)
