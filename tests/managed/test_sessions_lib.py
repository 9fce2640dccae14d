"""The sessions library the CLI prints: listing and showing what the store holds, and deleting a
session with its real instance (local processes, and docker), step by step."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest
from kit import Instance

from praisonai import _portal
from praisonai._errors import InstanceNotFoundError, SessionBusyError, SessionNotFoundError
from praisonai.compute.base import ComputeProvider
from praisonai.compute.lifecycle import owner_tag
from praisonai.compute.registry import resolve_compute
from praisonai.managed.events import Event, text_content
from praisonai.managed.sessions import delete_session, list_agents, list_sessions, show_session
from praisonai.managed.store import SessionRecord, SqliteSessionStore


@pytest.fixture
def store(home: Path) -> Iterator[SqliteSessionStore]:
    """The default store of this test's own home (what the library opens when given none)."""
    with SqliteSessionStore() as opened:
        yield opened


def _session(
    store: SqliteSessionStore, sandbox: Mapping[str, object] | None, *, hold: bool = False
) -> SessionRecord:
    """A session with a turn in its log and its usage; its lease released unless ``hold``."""
    agent = store.upsert_agent("local", "coder", {"model": "m"})
    record, lease = store.create_session(agent, owner_tag(), title="t", sandbox=sandbox)
    store.append(lease, [Event("user.message", {"content": text_content("hi")})], turn=1)
    store.add_usage(lease, turn=1, model="m", usage={"input_tokens": 3, "output_tokens": 2})
    if not hold:
        store.release(lease)
    return record


def _sandbox(provider: ComputeProvider, instance_id: str) -> dict[str, object]:
    return {"provider": provider.name, "options": provider.options.to_record(), "instance_id": instance_id}


@pytest.fixture(params=["local", "docker"])
def instance(request: pytest.FixtureRequest, make: Callable[..., Instance]) -> Instance:
    if request.param == "docker":
        request.getfixturevalue("docker_ok")
    return make(resolve_compute(request.param))


def test_delete_removes_the_instance_then_the_rows_and_a_second_delete_says_there_is_none(
    store: SqliteSessionStore, instance: Instance
) -> None:
    provider, instance_id = instance
    record = _session(store, _sandbox(provider, instance_id))
    assert _portal.call(provider.get_status, instance_id).instance_id == instance_id
    report = delete_session(record.id)  # the default store: the same file as `store`
    assert report.ok and [step.name for step in report.steps] == ["lease", "instance", "rows"]
    assert report.steps[1].detail == f"removed {instance_id}"
    assert "1 events" in report.steps[2].detail
    with pytest.raises(InstanceNotFoundError):
        _portal.call(resolve_compute(provider.name).get_status, instance_id)
    with pytest.raises(SessionNotFoundError):
        store.get_session(record.id)
    assert store.list_sessions() == []
    with pytest.raises(SessionNotFoundError, match=f"no session {record.id}"):
        delete_session(record.id)


def test_a_session_driven_by_a_live_process_is_not_deleted(
    store: SqliteSessionStore, make: Callable[..., Instance]
) -> None:
    provider, instance_id = make(resolve_compute("local"))
    record = _session(store, _sandbox(provider, instance_id), hold=True)  # this live process drives it
    with pytest.raises(SessionBusyError, match=owner_tag()):
        delete_session(record.id, store)
    assert _portal.call(provider.get_status, instance_id).instance_id == instance_id
    assert store.get_session(record.id).lease_epoch == record.lease_epoch
    assert len(store.events(record.id)) == 1


def test_an_instance_already_gone_counts_as_removed(
    store: SqliteSessionStore, make: Callable[..., Instance]
) -> None:
    provider, instance_id = make(resolve_compute("local"))
    record = _session(store, _sandbox(provider, instance_id))
    _portal.call(provider.shutdown, instance_id)
    report = delete_session(record.id, store)
    assert report.ok and report.steps[1].detail == f"{instance_id} was already gone"
    with pytest.raises(SessionNotFoundError):
        store.get_session(record.id)


def test_an_instance_that_cannot_be_removed_keeps_the_rows_until_told_to_keep_it(
    store: SqliteSessionStore,
) -> None:
    sandbox = {"provider": "nosuchcloud", "options": {}, "instance_id": "nosuchcloud_0123456789ab"}
    record = _session(store, sandbox)
    report = delete_session(record.id, store)
    assert not report.ok and [step.ok for step in report.steps] == [True, False, False]
    assert "nosuchcloud" in report.steps[1].detail and "\n" not in report.steps[1].detail
    assert store.get_session(record.id).lease_owner is None, "the delete gave its lease back"
    kept = delete_session(record.id, store, keep_instance=True)
    assert kept.ok and kept.steps[1].detail == "kept (keep_instance)"
    with pytest.raises(SessionNotFoundError):
        store.get_session(record.id)


def test_list_show_and_agents_read_what_the_store_holds(store: SqliteSessionStore) -> None:
    first = _session(store, None)
    newer = store.upsert_agent("local", "coder", {"model": "m2"})
    other = store.upsert_agent("local", "reviewer", {"model": "m"})
    second, lease = store.create_session(newer, owner_tag())
    store.release(lease)
    third, lease = store.create_session(other, owner_tag())
    store.release(lease)
    assert [r.id for r in list_sessions()] == [third.id, second.id, first.id]
    assert [r.id for r in list_sessions(store, agent="coder")] == [second.id, first.id]  # every version
    assert [r.id for r in list_sessions(store, agent=newer.id)] == [second.id]
    assert [r.id for r in list_sessions(store, agent="coder", limit=1)] == [second.id]
    assert list_sessions(store, status="error") == []
    with pytest.raises(SessionNotFoundError, match="no agent named 'nobody'"):
        list_sessions(store, agent="nobody")
    assert [(a.name, a.version) for a in list_agents()] == [("coder", 1), ("coder", 2), ("reviewer", 1)]
    view = show_session(first.id)
    assert view.record.id == first.id and view.agent.id == first.agent_id
    assert [e.event.text for e in view.events] == ["hi"]
    assert [(u.turn, u.model, u.input_tokens, u.output_tokens) for u in view.usage] == [(1, "m", 3, 2)]
    with pytest.raises(SessionNotFoundError):
        show_session("msess_nonsense")
