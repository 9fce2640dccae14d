"""The conformance suite every :class:`~praisonai.managed.store.SessionStore` must pass
(:data:`CHECKS`), and every :class:`~praisonai.managed.store.RemoteResourceCache`
(:data:`REMOTE_CHECKS`, each ``check(open_cache)`` alike), shipped in the package so that a store
written elsewhere is held to the same contract.

Each check is ``check(open_store)``, where ``open_store()`` returns a new handle onto one store
that is empty when the check starts: two handles are what two processes see. A check closes what
it opens and raises ``AssertionError`` on a broken contract. Run them from pytest::

    @pytest.mark.parametrize("name", CHECKS)
    def test_conformance(name, tmp_path):
        CHECKS[name](lambda: SqliteSessionStore(tmp_path / "store.db"))

or all at once with :func:`run_checks`. Leases are held by owners on a host that is not this one
(their liveness cannot be told, so only expiry frees them); no check waits on a clock.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any, Protocol, TypeVar

from praisonai._errors import ConfigError, SessionBusyError, SessionNotFoundError, StaleSessionError
from praisonai.managed.events import Event, delta, new_id, text_content
from praisonai.managed.store import (
    USAGE_KEYS,
    AgentRecord,
    Lease,
    RemoteResource,
    RemoteResourceCache,
    SessionStore,
    TurnUsage,
)

OpenStore = Callable[[], SessionStore]
Check = Callable[[OpenStore], None]
OpenCache = Callable[[], RemoteResourceCache]
RemoteCheck = Callable[[OpenCache], None]

#: Every check of a sessions store by name, in the order they are defined.
CHECKS: dict[str, Check] = {}
#: Every check of a cache of remote resources by name.
REMOTE_CHECKS: dict[str, RemoteCheck] = {}
#: Owners on other hosts: alive as far as this host can tell.
OWNER_A, OWNER_B = "alice@conformance-a.invalid:101", "bob@conformance-b.invalid:202"
CONFIG = {"model": "m", "system": "You are a coder.", "tools": ["execute_command"]}


def run_checks(fresh: Callable[[], OpenStore]) -> dict[str, str]:
    """Run every check, each on a store ``fresh()`` makes; return ``{name: failure}`` for those
    that failed (an assertion, or any other exception the store raised)."""
    failures = {}
    for name, check in CHECKS.items():
        try:
            check(fresh())
        except AssertionError as exc:
            failures[name] = str(exc) or "assertion failed"
        except Exception as exc:  # a store that breaks in another way fails the check too
            failures[name] = f"{type(exc).__name__}: {exc}"
    return failures


def _check(fn: Check) -> Check:
    CHECKS[fn.__name__] = fn
    return fn


def _remote_check(fn: RemoteCheck) -> RemoteCheck:
    REMOTE_CHECKS[fn.__name__] = fn
    return fn


class _Closable(Protocol):
    def close(self) -> None: ...


_Opened = TypeVar("_Opened", bound=_Closable)


@contextlib.contextmanager
def _opened(open_store: Callable[[], _Opened]) -> Iterator[_Opened]:
    store = open_store()
    try:
        yield store
    finally:
        store.close()


def _raises(kind: type[BaseException], fn: Callable[..., Any], *args: Any, **kwargs: Any) -> BaseException:
    """What ``fn(*args, **kwargs)`` raised, which must be a ``kind``."""
    try:
        fn(*args, **kwargs)
    except kind as exc:
        return exc
    raise AssertionError(f"{getattr(fn, '__name__', fn)}{args} did not raise {kind}")


def _session(store: SessionStore, owner: str = OWNER_A, **kwargs: Any) -> Lease:
    return store.create_session(store.upsert_agent("local", "coder", CONFIG), owner, **kwargs)[1]


def _messages(*texts: str) -> list[Event]:
    return [Event("user.message", {"content": text_content(text)}) for text in texts]


@_check
def agents_are_reused_by_config_hash_and_versioned_by_name(open_store: OpenStore) -> None:
    with _opened(open_store) as store, _opened(open_store) as other:
        first = store.upsert_agent("local", "coder", CONFIG)
        assert (first.version, first.backend, first.name, dict(first.config)) == (1, "local", "coder", CONFIG)
        assert first.id.startswith("magt_") and len(first.config_hash) == 64
        reordered = dict(reversed(list(CONFIG.items())))
        assert other.upsert_agent("local", "coder", reordered) == first, "same config, same record"
        second = store.upsert_agent("local", "coder", {**CONFIG, "model": "m2"})
        assert second.version == 2 and second.id != first.id and second.config_hash != first.config_hash
        assert store.upsert_agent("local", "coder", CONFIG) == first, "an older config is its old version"
        reviewer = store.upsert_agent("local", "reviewer", CONFIG)
        hosted = store.upsert_agent("anthropic", "coder", CONFIG)
        assert reviewer.version == hosted.version == 1 and len({reviewer.id, hosted.id, first.id}) == 3
        assert other.get_agent(second.id) == second
        assert {a.id for a in other.list_agents()} == {first.id, second.id, reviewer.id, hosted.id}
        assert other.list_agents("anthropic") == [hosted]


@_check
def concurrent_upserts_of_one_config_make_one_record(open_store: OpenStore) -> None:
    handles = [open_store() for _ in range(4)]
    users = handles + handles  # two threads on each handle: a store is shared by threads
    barrier, made = threading.Barrier(len(users)), []

    def upsert(store: SessionStore) -> None:
        barrier.wait()
        made.append(store.upsert_agent("local", "racer", CONFIG))

    threads = [threading.Thread(target=upsert, args=(store,)) for store in users]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(made) == len(users), "an upsert failed"
        assert len({agent.id for agent in made}) == 1 and made[0].version == 1
        assert [a.name for a in handles[0].list_agents()] == ["racer"]
    finally:
        for store in handles:
            store.close()


@_check
def sessions_are_created_read_and_listed_newest_first(open_store: OpenStore) -> None:
    with _opened(open_store) as store, _opened(open_store) as other:
        coder, reviewer = (
            store.upsert_agent("local", "coder", CONFIG),
            store.upsert_agent("local", "rev", CONFIG),
        )
        sandbox = {"provider": "local", "options": {"type": "local"}, "instance_id": "local_0123456789ab"}
        one, lease = store.create_session(coder, OWNER_A, title="one", metadata={"k": [1]}, sandbox=sandbox)
        assert one.id.startswith("msess_") and (lease.session_id, lease.owner) == (one.id, OWNER_A)
        assert (one.status, one.title, dict(one.metadata), dict(one.sandbox or {})) == (
            "idle",
            "one",
            {"k": [1]},
            sandbox,
        )
        assert (one.agent_id, one.agent_version, one.backend) == (coder.id, 1, "local")
        assert (one.lease_owner, one.lease_epoch, one.last_seq, one.turns, one.pending) == (
            OWNER_A,
            lease.epoch,
            0,
            0,
            (),
        )
        assert dict(one.usage) == dict.fromkeys(USAGE_KEYS, 0) and one.stop_reason is None
        assert other.get_session(one.id) == one
        two, two_lease = store.create_session(reviewer, OWNER_A)
        three, _ = store.create_session(coder, OWNER_A)
        store.update(lease, title="touched")  # now the newest updated
        store.update(two_lease, status="error")
        assert [s.id for s in other.list_sessions()] == [two.id, one.id, three.id]
        assert [s.id for s in other.list_sessions(agent_id=coder.id)] == [one.id, three.id]
        assert [s.id for s in other.list_sessions(status="error")] == [two.id]
        assert [s.id for s in other.list_sessions(agent_id=coder.id, status="error")] == []
        assert [s.id for s in other.list_sessions(limit=1)] == [two.id]


@_check
def append_keeps_order_and_is_idempotent_per_event_id(open_store: OpenStore) -> None:
    with _opened(open_store) as store, _opened(open_store) as other:
        lease = _session(store)
        first = _messages("one", "two — ünïcode", "three")
        assert store.append(lease, first, turn=1) == 3
        fourth = Event("agent.tool_use", {"name": "execute_command", "input": {"command": "ls -l"}})
        assert store.append(lease, [first[2], fourth, fourth], turn=2) == 4, "known ids are skipped"
        assert store.append(lease, [fourth], turn=2) == 4
        log = other.events(lease.session_id)
        assert [(e.seq, e.turn, e.event) for e in log] == [
            (1, 1, first[0]),
            (2, 1, first[1]),
            (3, 1, first[2]),
            (4, 2, fourth),
        ]
        assert [e.event.id for e in other.events(lease.session_id, after_seq=2)] == [first[2].id, fourth.id]
        assert [e.seq for e in other.events(lease.session_id, after_seq=1, limit=2)] == [2, 3]
        late = _messages("late")
        _raises(ValueError, store.append, lease, [*late, delta(late[0].id, "x")], turn=3)
        assert len(other.events(lease.session_id)) == 4, "a batch with an ephemeral event writes nothing"
        assert other.get_session(lease.session_id).last_seq == 4


@_check
def update_sets_the_session_fields(open_store: OpenStore) -> None:
    with _opened(open_store) as store, _opened(open_store) as other:
        lease = _session(store)
        fields: dict[str, Any] = {
            "status": "requires_action",
            "stop_reason": {"type": "requires_action", "event_ids": ["e1"]},
            "pending": [{"event_id": "e1", "kind": "confirmation", "name": "execute_command", "input": {}}],
            "last_error": {"type": "api_error", "message": "x"},
            "title": "renamed",
            "turns": 3,
            "sandbox": {"provider": "docker", "options": {}, "instance_id": "docker_0123456789ab"},
            "sandbox_status": "attached",
            "metadata": {"a": 1},
            "remote_session_id": "sesn_1",
        }
        record = store.update(lease, **fields)
        assert other.get_session(lease.session_id) == record
        got = {name: getattr(record, name) for name in fields}
        assert got == {**fields, "pending": tuple(fields["pending"])}
        _raises(ValueError, store.update, lease, lease_epoch=99)
        _raises(ValueError, store.update, lease, status="napping")
        assert other.get_session(lease.session_id) == record, "a refused update changes nothing"
        cleared = store.update(lease, pending=[], stop_reason=None, last_error=None, status="idle")
        assert (cleared.pending, cleared.stop_reason, cleared.last_error) == ((), None, None)


@_check
def a_lease_taken_over_fences_off_its_old_holder(open_store: OpenStore) -> None:
    with _opened(open_store) as store, _opened(open_store) as other:
        old = _session(store)
        new = other.acquire(old.session_id, OWNER_B, force=True)
        assert new.epoch == old.epoch + 1 and new.owner == OWNER_B
        _raises(StaleSessionError, store.append, old, _messages("stale"), turn=1)
        _raises(StaleSessionError, store.update, old, status="running")
        _raises(StaleSessionError, store.add_usage, old, turn=1, model="m", usage={"input_tokens": 1})
        _raises(StaleSessionError, store.renew, old)
        store.release(old)  # not its lease any more: a no-op
        record = other.get_session(old.session_id)
        assert (record.lease_owner, record.lease_epoch, record.status) == (OWNER_B, new.epoch, "idle")
        assert other.events(old.session_id) == [] and other.turn_usage(old.session_id) == []
        assert other.append(new, _messages("fresh"), turn=1) == 1


@_check
def a_live_lease_of_another_owner_is_busy(open_store: OpenStore) -> None:
    with _opened(open_store) as store, _opened(open_store) as other:
        lease = _session(store)
        exc = _raises(SessionBusyError, other.acquire, lease.session_id, OWNER_B)
        assert OWNER_A in str(exc), "the message names who drives the session"
        record = other.get_session(lease.session_id)
        assert (record.lease_owner, record.lease_epoch) == (OWNER_A, lease.epoch)
        assert store.append(lease, _messages("still mine"), turn=1) == 1
        again = other.acquire(lease.session_id, OWNER_A)  # the same owner takes it back
        assert again.epoch == lease.epoch + 1
        _raises(StaleSessionError, store.append, lease, _messages("old handle"), turn=1)


@_check
def an_expired_or_released_lease_is_taken_without_force(open_store: OpenStore) -> None:
    with _opened(open_store) as store, _opened(open_store) as other:
        lease = _session(store, ttl_s=0.0)
        taken = other.acquire(lease.session_id, OWNER_B)
        assert taken.epoch == lease.epoch + 1
        other.renew(taken, ttl_s=3600.0)
        _raises(SessionBusyError, store.acquire, lease.session_id, OWNER_A)
        other.release(taken)
        assert store.get_session(lease.session_id).lease_owner is None
        _raises(StaleSessionError, other.append, taken, _messages("released"), turn=1)
        assert store.acquire(lease.session_id, OWNER_A).epoch == taken.epoch + 1


@_check
def usage_adds_per_request_per_turn_and_in_total(open_store: OpenStore) -> None:
    with _opened(open_store) as store, _opened(open_store) as other:
        lease = _session(store)
        full = {
            "input_tokens": 10,
            "output_tokens": 5,
            "cache_read_input_tokens": 2,
            "cache_creation_input_tokens": 1,
        }
        store.add_usage(lease, turn=1, model="m", usage=full)
        store.add_usage(lease, turn=1, model="m", usage={"input_tokens": 1, "output_tokens": 1})
        store.add_usage(lease, turn=1, model="m2", usage={"input_tokens": 7, "requests": 2})
        store.add_usage(lease, turn=2, model="m", usage={"output_tokens": 3})
        _raises(ValueError, store.add_usage, lease, turn=2, model="m", usage={"cache_read_tokens": 9})
        assert other.turn_usage(lease.session_id) == [
            TurnUsage(1, "m", 2, 11, 6, 2, 1),
            TurnUsage(1, "m2", 2, 7, 0, 0, 0),
            TurnUsage(2, "m", 1, 0, 3, 0, 0),
        ]
        total = {
            "input_tokens": 18,
            "output_tokens": 9,
            "cache_read_input_tokens": 2,
            "cache_creation_input_tokens": 1,
            "requests": 5,
        }
        assert dict(other.get_session(lease.session_id).usage) == total


@_check
def delete_removes_the_session_and_is_idempotent(open_store: OpenStore) -> None:
    with _opened(open_store) as store, _opened(open_store) as other:
        gone, kept = _session(store), _session(store)
        for lease in (gone, kept):
            store.append(lease, _messages("a", "b"), turn=1)
            store.add_usage(lease, turn=1, model="m", usage={"input_tokens": 1})
        assert other.delete_session(gone.session_id) is True
        for read in (store.get_session, store.events, store.turn_usage):
            _raises(SessionNotFoundError, read, gone.session_id)
        _raises(SessionNotFoundError, store.append, gone, _messages("late"), turn=2)
        assert [s.id for s in store.list_sessions()] == [kept.session_id]
        assert other.delete_session(gone.session_id) is False
        assert len(store.events(kept.session_id)) == 2 and len(store.turn_usage(kept.session_id)) == 1
        assert [a.name for a in store.list_agents()] == ["coder"], "agents outlive their sessions"


@_check
def unknown_and_malformed_ids_raise_session_not_found(open_store: OpenStore) -> None:
    with _opened(open_store) as store:
        unknown = new_id("msess")
        for bad in (unknown, "", "msess_x", "../../etc/passwd", "msess_" + "0" * 25 + "/", new_id("magt")):
            for call in (store.get_session, store.events, store.turn_usage):
                _raises(SessionNotFoundError, call, bad)
            _raises(SessionNotFoundError, store.acquire, bad, OWNER_A)
            assert store.delete_session(bad) is False
        for bad in (new_id("magt"), "nope", new_id("msess")):
            _raises(SessionNotFoundError, store.get_agent, bad)
        ghost = AgentRecord(new_id("magt"), "local", "ghost", 1, {}, "0" * 64, 0.0)
        _raises(SessionNotFoundError, store.create_session, ghost, OWNER_A)
        _raises(SessionNotFoundError, store.append, Lease(unknown, OWNER_A, 1), _messages("x"), turn=1)
        assert store.list_sessions() == [] and store.list_agents() == []


@_check
def a_usage_snapshot_replaces_the_totals_and_remote_details_round_trip(open_store: OpenStore) -> None:
    with _opened(open_store) as store:
        lease = _session(store)
        store.add_usage(lease, turn=1, model="m", usage={"input_tokens": 10, "output_tokens": 2})
        snapshot = {"input_tokens": 30, "output_tokens": 7, "cache_read_input_tokens": 5}
        remote = {"agent": {"id": "agent_1", "version": 2}, "usage": {"list_cost": {"amount": "12"}}}
        record = store.update(lease, usage=snapshot, remote=remote)
        assert dict(record.usage) == {**snapshot, "cache_creation_input_tokens": 0, "requests": 1}
        assert store.get_session(lease.session_id).remote == remote
        assert [t.input_tokens for t in store.turn_usage(lease.session_id)] == [10], "per request stays"
        _raises(ConfigError, store.update, lease, usage={"dollars": 1})


@_remote_check
def the_first_remote_resource_recorded_for_a_config_wins(open_cache: OpenCache) -> None:
    with _opened(open_cache) as one, _opened(open_cache) as two:
        assert one.remote_resource("anthropic", "agent", "h1") is None
        mine = RemoteResource("anthropic", "agent", "h1", "agent_A", 1, "a", {"model": "m"}, 1.0)
        theirs = RemoteResource("anthropic", "agent", "h1", "agent_B", 1, "a", {"model": "m"}, 2.0)
        assert one.add_remote_resource(mine) == mine
        assert two.add_remote_resource(theirs) == mine, "the first recorded must win"
        env = RemoteResource("anthropic", "environment", "h1", "env_1", None, "e", {}, 3.0)
        two.add_remote_resource(env)
        assert [r.remote_id for r in one.list_remote_resources("anthropic")] == ["agent_A", "env_1"]
        assert [r.remote_id for r in one.list_remote_resources("anthropic", "environment")] == ["env_1"]
        assert one.forget_remote_resource("anthropic", "agent", "agent_A")
        assert not one.forget_remote_resource("anthropic", "agent", "agent_A")
        assert two.remote_resource("anthropic", "agent", "h1") is None


@_remote_check
def remote_resources_are_kept_apart_by_scope(open_cache: OpenCache) -> None:
    """One config in two scopes (two keys or endpoints): two records, each found and forgotten
    only in its own scope."""
    with _opened(open_cache) as store:
        here = RemoteResource("anthropic", "agent", "h1", "agent_A", 1, "a", {}, 1.0, "scope-1")
        there = RemoteResource("anthropic", "agent", "h1", "agent_B", 1, "a", {}, 2.0, "scope-2")
        assert (store.add_remote_resource(here), store.add_remote_resource(there)) == (here, there)
        assert store.remote_resource("anthropic", "agent", "h1", "scope-2") == there
        assert store.remote_resource("anthropic", "agent", "h1") is None, "no scope: none of them"
        assert store.list_remote_resources("anthropic", "agent", "scope-1") == [here]
        assert not store.forget_remote_resource("anthropic", "agent", "agent_A", "scope-2")
        assert store.forget_remote_resource("anthropic", "agent", "agent_A", "scope-1")
        assert store.list_remote_resources("anthropic") == [there]
