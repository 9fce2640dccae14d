"""A session's snapshots: its checkpoints (one at the end of each turn when its config says
``checkpoints=True``) and the snapshot a fork starts from; which of them a session owns, and their
removal when it is deleted.

Both are recorded in the session's own log, so any process finds them: ``session.checkpoint``
``{"turn", "snapshot_id", "instance_id", "provider"}`` ends the turn it saves (before its idle
event), and ``session.forked`` ``{"from_session_id", "at_turn", "snapshot_id", "owned",
"instance_id"}`` follows the turns a fork copied.

A snapshot goes with the last session that needs it. A session owns its checkpoints, and a fork
owns the snapshot it starts from when that was taken for it (a fork of the latest state); a fork
from a checkpoint starts from its original's, which the original owns while it exists. Deleting a
session removes its instance, then what it owns, and the snapshot it started from once the session
owning that is gone. One that an instance still starts from (docker: a fork's container uses its
image) is kept then, and the delete of that fork removes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import anyio.to_thread

from praisonai import _telemetry
from praisonai._errors import ConfigError, PraisonAIError, SessionNotFoundError
from praisonai.compute import snapshots
from praisonai.managed.events import Event
from praisonai.managed.store import SessionStore, StoredEvent
from praisonai.sandbox import AsyncSandbox

__all__ = ["CHECKPOINT", "FORKED", "checkpoint_at", "owned", "remove", "take"]

CHECKPOINT: Final = "session.checkpoint"
FORKED: Final = "session.forked"

log = _telemetry.logger("managed")


async def take(sandbox: AsyncSandbox, session_id: str, turn: int) -> Event | None:
    """Snapshot the session's instance as turn ``turn``'s checkpoint; its event, or ``None``
    when the provider has no snapshots or the snapshot failed (logged: the turn keeps its result,
    and a fork at that turn is refused, saying why)."""
    front = snapshots.front(sandbox.provider)
    if front.snapshotter is None:
        return None
    try:
        info = await front.take(sandbox.id, f"{session_id}.turn{turn}")
    except Exception as exc:  # the turn's result is recorded: a failed snapshot must not undo it
        log.warning("no checkpoint of %s at turn %d: %s", session_id, turn, exc)
        return None
    data = {"turn": turn, "snapshot_id": info.id, "instance_id": sandbox.id, "provider": info.provider}
    return Event(CHECKPOINT, data)


def checkpoint_at(events: Sequence[StoredEvent], turn: int) -> str | None:
    """The id of the session's checkpoint at the end of ``turn``, if it took one."""
    found = [s.event for s in events if s.event.type == CHECKPOINT and s.event.data.get("turn") == turn]
    return str(found[-1].data["snapshot_id"]) if found else None


def owned(store: SessionStore, events: Sequence[StoredEvent]) -> list[str]:
    """The snapshots that go when the session whose log is ``events`` is deleted (see the
    module docstring)."""
    ids = [str(s.event.data["snapshot_id"]) for s in events if s.event.type == CHECKPOINT]
    for forked in (s.event.data for s in events if s.event.type == FORKED):
        if forked.get("snapshot_id") and (forked.get("owned") or _gone(store, forked["from_session_id"])):
            ids.append(str(forked["snapshot_id"]))
    return ids


def _gone(store: SessionStore, session_id: object) -> bool:
    try:
        store.get_session(str(session_id))
    except SessionNotFoundError:
        return True
    return False


async def remove(snapshot_ids: Sequence[str]) -> tuple[bool, str]:
    """Remove the snapshots; whether none failed, and what was done, in one sentence. One that is
    gone already counts as removed; one an instance still starts from is kept (not a failure)."""
    removed, kept, failed = [], [], []
    for snapshot_id in snapshot_ids:
        try:
            found = await anyio.to_thread.run_sync(snapshots.find, snapshot_id)
        except ConfigError:
            continue  # gone already
        try:
            await snapshots.remove(found)
        except ConfigError:  # in use by an instance made from it: a fork's delete removes it
            kept.append(snapshot_id)
        except PraisonAIError as exc:
            failed.append(f"{snapshot_id} ({exc})")
        else:
            removed.append(snapshot_id)
    said = [f"removed {len(removed)} snapshot(s)"]
    if kept:
        said.append(f"kept {', '.join(kept)}: a fork's instance starts from it; its delete removes it")
    if failed:
        said.append(f"could not remove {'; '.join(failed)}")
    return not failed, "; ".join(said)
