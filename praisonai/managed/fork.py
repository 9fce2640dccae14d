"""Forking a stored session (``praisonai managed sessions fork``, ``ManagedAgent.fork_session``):
a new session whose transcript is the original's up to turn K and whose instance starts from a
snapshot of the original's instance at the end of that turn.

That snapshot is the turn's checkpoint (taken when the agent's config says ``checkpoints=True``),
or, for the last turn only, one taken of the instance now. The original is only read: its log,
its row and its instance's files stay as they were, and both sessions resume on their own. The
fork's log is the original's events of turns 1..K (its checkpoints left out: they are the
original's), then ``session.forked``; its usage is theirs. Which snapshots go when which session
is deleted: :mod:`praisonai.managed.checkpoints`.

A hosted session's remote container cannot be forked: its fork keeps the transcript alone (its
next turn opens a new remote session), and the result says so.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread

from praisonai import _portal
from praisonai._errors import ConfigError, SessionBusyError
from praisonai.compute import snapshots
from praisonai.compute.lifecycle import owner_tag
from praisonai.compute.snapshots import SnapshotInfo
from praisonai.managed import checkpoints
from praisonai.managed.events import Event
from praisonai.managed.instance._source import provider_of, source_of
from praisonai.managed.live._result import STATUS
from praisonai.managed.sessions import HOSTED, _using
from praisonai.managed.store import USAGE_KEYS, SessionRecord, SessionStore, StoredEvent, lease_holder
from praisonai.managed.text import line_problem
from praisonai.sandbox.provisioning import plan

__all__ = ["ForkResult", "fork_session"]

#: What a hosted fork's result says (its transcript alone is forked).
HOSTED_NOTE = (
    "a hosted session's remote container cannot be forked: the fork has its transcript, and its "
    "next turn opens a new remote session with a fresh container"
)
_INSTANCE_EVENTS = ("sandbox.provisioned", "sandbox.replaced")


@dataclass(frozen=True)
class ForkResult:
    """The new session (``session_id``), made from ``source_id`` at turn ``at_turn``; the
    snapshot its instance started from and that instance (``None``: it had none at that turn, or
    it is hosted); ``note``: what was not forked, in one sentence."""

    session_id: str
    source_id: str
    at_turn: int
    snapshot_id: str | None = None
    instance_id: str | None = None
    note: str | None = None


def fork_session(
    session_id: str,
    at_turn: int | None = None,
    *,
    title: str | None = None,
    store: SessionStore | None = None,
    env: Mapping[str, str] | None = None,
) -> ForkResult:
    """Fork the stored session at the end of turn ``at_turn`` (``None``: its last turn); ``title``
    names the fork (default: the original's); ``env``: the values of the instance's variables
    (the store keeps their names only). Nothing is made when it is refused.

    Raises:
        SessionNotFoundError: no such session.
        ConfigError: ``at_turn`` is not one of its turns, or that turn has no checkpoint and is
            not the last (one sentence: turn checkpoints on).
        SessionBusyError: a live process is running a turn of it.
        UnsupportedFeatureError: its instance's provider has no snapshots.
    """
    with _using(store) as opened:
        return _portal.call(fork, opened, session_id, at_turn, title, dict(env or {}))


async def fork(
    store: SessionStore, session_id: str, at_turn: object, title: str | None, env: Mapping[str, str]
) -> ForkResult:
    """:func:`fork_session` on ``store``, awaited."""
    record = store.get_session(session_id)
    turn = _check_turn(record, at_turn)
    holder = lease_holder(record)
    if holder is not None:
        raise SessionBusyError(
            f"session {session_id} is in use by {holder}: fork it when its turn has ended", op="fork"
        )
    why = None if title is None else line_problem(title)
    if why is not None:
        raise ConfigError(
            f"the fork's title cannot be {title!r}: {why}; use plain text on one line", op="fork"
        )
    copied = [
        s for s in store.events(session_id) if s.turn <= turn and s.event.type != checkpoints.CHECKPOINT
    ]
    hosted = record.backend == HOSTED
    base, owned = (None, False) if hosted else await _base(store, record, turn)
    if base is None:  # hosted, or no instance at that turn: the transcript alone
        forked = {"from_session_id": session_id, "at_turn": turn, "snapshot_id": None}
        made = _new_session(store, record, copied, turn, title, None, forked)
        return ForkResult(made, session_id, turn, note=HOSTED_NOTE if hosted else None)
    try:
        reference = await _instance_from(record.sandbox or {}, base, env)
    except BaseException:
        if owned:
            with anyio.CancelScope(shield=True):
                await checkpoints.remove([base.id])
        raise
    forked = {
        "from_session_id": session_id,
        "at_turn": turn,
        "snapshot_id": base.id,
        "owned": owned,
        "instance_id": reference["instance_id"],
    }
    try:
        made = _new_session(store, record, copied, turn, title, reference, forked)
    except BaseException:
        with anyio.CancelScope(shield=True):
            await provider_of(reference).shutdown(str(reference["instance_id"]))
            if owned:
                await checkpoints.remove([base.id])
        raise
    return ForkResult(made, session_id, turn, base.id, str(reference["instance_id"]))


def _check_turn(record: SessionRecord, at_turn: object) -> int:
    if record.turns == 0:
        raise ConfigError(f"session {record.id} has no turn yet: there is nothing to fork", op="fork")
    if at_turn is None:
        return record.turns
    if isinstance(at_turn, bool) or not isinstance(at_turn, int) or not 1 <= at_turn <= record.turns:
        raise ConfigError(
            f"--at-turn must be a turn of session {record.id}, 1 to {record.turns}, not {at_turn!r}",
            op="fork",
        )
    return at_turn


async def _base(store: SessionStore, record: SessionRecord, turn: int) -> tuple[SnapshotInfo | None, bool]:
    """The snapshot the fork's instance starts from, and whether the fork owns it (it was taken
    for the fork); ``None`` when the session had no instance at the end of ``turn``."""
    upto = [s for s in store.events(record.id) if s.turn <= turn]
    if not any(s.event.type in _INSTANCE_EVENTS for s in upto) or not record.sandbox:
        return None, False
    saved = checkpoints.checkpoint_at(upto, turn)
    if saved is not None:
        try:
            return await anyio.to_thread.run_sync(snapshots.find, saved), False
        except ConfigError:
            raise ConfigError(
                f"the checkpoint of session {record.id} at turn {turn} ({saved}) was removed; "
                "fork it at a turn that still has one",
                op="fork",
            ) from None
    if turn != record.turns:
        raise ConfigError(
            f"session {record.id} has no checkpoint at turn {turn}, so only its last turn "
            f"({record.turns}) can be forked: turn checkpoints on (checkpoints=True in its agent's "
            "config) to fork at earlier turns",
            op="fork",
        )
    provider = provider_of(record.sandbox)
    return await snapshots.front(provider).take(str(record.sandbox["instance_id"]), None), True


async def _instance_from(
    reference: Mapping[str, Any], snapshot: SnapshotInfo, env: Mapping[str, str]
) -> dict[str, Any]:
    """A new instance from ``snapshot``, configured as the recorded instance was; its reference."""
    source = source_of(reference, env)
    chosen = await anyio.to_thread.run_sync(
        functools.partial(plan, source.compute, dict(source.fields), environment=source.environment)
    )
    info = await snapshots.provision_from(chosen.provider, chosen.config, snapshot)
    return {**reference, "instance_id": info.instance_id}


def _new_session(
    store: SessionStore,
    record: SessionRecord,
    copied: Sequence[StoredEvent],
    turn: int,
    title: str | None,
    reference: Mapping[str, Any] | None,
    forked: Mapping[str, Any],
) -> str:
    """The fork's rows: the original's events and usage of turns 1..``turn``, then
    ``session.forked``, its status as that turn ended; its id. When a write fails, the rows made
    go again."""
    agent = store.get_agent(record.agent_id)
    metadata = {**record.metadata, "forked_from": {"session_id": record.id, "at_turn": turn}}
    new, lease = store.create_session(
        agent, owner_tag(), title=title or record.title, metadata=metadata, sandbox=reference
    )
    try:
        for number, group in itertools.groupby(copied, key=lambda s: s.turn):
            store.append(lease, [s.event for s in group], turn=number)
        for used in store.turn_usage(record.id):
            if used.turn <= turn:
                counts = {key: getattr(used, key) for key in USAGE_KEYS}
                store.add_usage(lease, turn=used.turn, model=used.model, usage=counts)
        store.update(
            lease,
            events=[Event(checkpoints.FORKED, dict(forked))],
            turn=turn,
            turns=turn,
            sandbox_status="attached" if reference else None,
            **_ending(record, copied, turn),
        )
    except BaseException:
        store.delete_session(new.id)
        raise
    store.release(lease)
    return new.id


def _ending(record: SessionRecord, copied: Sequence[StoredEvent], turn: int) -> dict[str, Any]:
    """The session's status, stop reason and pending approvals as turn ``turn`` ended."""
    if turn == record.turns:
        return {
            "status": record.status,
            "stop_reason": record.stop_reason,
            "pending": list(record.pending),
            "last_error": record.last_error,
        }
    idles = [s.event for s in copied if s.turn == turn and s.event.type == "session.status_idle"]
    stop = dict(idles[-1].data["stop_reason"]) if idles else {"type": "interrupted"}
    waiting = set(stop.get("event_ids", ()))
    uses = [s.event for s in copied if s.event.id in waiting]
    pending = [
        {"event_id": u.id, "kind": "confirmation", "name": u.data["name"], "input": u.data["input"]}
        for u in uses
    ]
    return {"status": STATUS.get(str(stop["type"]), "idle"), "stop_reason": stop, "pending": pending}
