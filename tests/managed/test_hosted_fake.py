"""The Managed Agents fake (fakes.managed_agents) driven by the real ``anthropic`` client
(``Anthropic`` and ``AsyncAnthropic`` with ``base_url``): the resources, a streamed turn with
deltas, ``requires_action`` for custom tools and confirmations, a dropped stream reconciled with
``events.list``, the faults issue 15's tests need, and the SDK's typed exceptions.

Every wait is on an event the fake produces (a stream frame, a recorded event); no timings.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx2
import pytest
from anthropic import Anthropic, AsyncAnthropic
from fakes.managed_agents import (
    API_KEY,
    ManagedAgentsFake,
    Step,
    custom_tool,
    emit,
    end_turn,
    say,
    session_error,
    tool,
    usage,
    wait,
)

CUSTOM = {"type": "custom", "name": "lookup", "description": "look a word up",
          "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}}}  # fmt: skip


_clients: list[Anthropic] = []


@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    yield
    while _clients:
        _clients.pop().close()


def client(fake: ManagedAgentsFake, **kwargs: Any) -> Anthropic:
    """A real client on the fake (no retries unless asked), closed after the test."""
    options: dict[str, Any] = {"api_key": API_KEY, "max_retries": 0, **kwargs}
    _clients.append(Anthropic(base_url=fake.url, timeout=30, **options))
    return _clients[-1]


def user(text: str) -> dict[str, Any]:
    return {"type": "user.message", "content": [{"type": "text", "text": text}]}


def new_session(fake: ManagedAgentsFake, steps: list[Step], c: Anthropic | None = None) -> str:
    """An agent, an environment and a session on them, playing ``steps``."""
    c = c or client(fake)
    agent = c.beta.agents.create(name="coder", model="claude-sonnet-4-6", tools=[CUSTOM])
    env = c.beta.environments.create(name=f"env-{len(fake.environments())}", config={"type": "cloud"})
    session = c.beta.sessions.create(agent=agent.id, environment_id=env.id)
    fake.script_session(session.id, steps)
    return session.id


def run_turn(c: Anthropic, sid: str, first: list[dict[str, Any]], answer: Any = None) -> list[Any]:
    """Open the stream, send ``first``, read until an idle that is not ``requires_action``;
    ``answer(event_ids)`` gives the events that resolve a ``requires_action``."""
    seen = []
    with c.beta.sessions.events.stream(sid, event_deltas=["agent.message"]) as stream:
        c.beta.sessions.events.send(sid, events=first)
        for event in stream:
            seen.append(event)
            if event.type == "session.status_idle":
                if event.stop_reason.type != "requires_action":
                    break
                c.beta.sessions.events.send(sid, events=answer(event.stop_reason.event_ids))
    return seen


# ---- resources ----------------------------------------------------------------------------------


def test_the_async_client_creates_resources_and_streams_a_turn_with_deltas(fake: ManagedAgentsFake) -> None:
    fake.set_script([say("Hello there", chunks=3), end_turn()])

    async def main() -> tuple[list[Any], Any, list[Any]]:
        async with AsyncAnthropic(base_url=fake.url, api_key=API_KEY, max_retries=0) as c:
            agent = await c.beta.agents.create(name="coder", model="claude-sonnet-4-6", tools=[CUSTOM])
            env = await c.beta.environments.create(
                name="praisonai-env-1",
                config={"type": "cloud", "networking": {"type": "limited", "allowed_hosts": ["pypi.org"],
                        "allow_package_managers": True}, "packages": {"pip": ["requests==2.32.0"]}},
            )  # fmt: skip
            session = await c.beta.sessions.create(
                agent={"type": "agent", "id": agent.id, "version": agent.version},
                environment_id=env.id,
                title="demo",
                metadata={"praisonai_session": "msess_1"},
            )
            seen = []
            stream = await c.beta.sessions.events.stream(session.id, event_deltas=["agent.message"])
            async with stream:
                await c.beta.sessions.events.send(session.id, events=[user("hi")])
                async for event in stream:
                    seen.append(event)
                    if event.type == "session.status_idle":
                        break
            listed = [e async for e in c.beta.sessions.events.list(session.id)]
            return seen, await c.beta.sessions.retrieve(session.id), listed

    seen, session, listed = asyncio.run(main())
    assert [e.type for e in seen] == [
        "user.message", "session.status_running", "span.model_request_start", "event_start",
        "event_delta", "event_delta", "event_delta", "agent.message", "span.model_request_end",
        "session.status_idle",
    ]  # fmt: skip
    message = next(e for e in seen if e.type == "agent.message")
    deltas = [e for e in seen if e.type == "event_delta"]
    assert "".join(d.delta.content.text for d in deltas) == message.content[0].text == "Hello there"
    assert seen[3].event.id == message.id and {d.event_id for d in deltas} == {message.id}
    assert seen[-1].stop_reason.type == "end_turn"
    assert [e.id for e in listed] == [e.id for e in seen if not e.type.startswith("event_")]  # no deltas
    assert all(e.processed_at for e in listed)
    assert session.title == "demo" and session.metadata == {"praisonai_session": "msess_1"}
    assert session.status == "idle" and session.agent.version == 1
    assert session.usage.input_tokens == 10 and session.usage.output_tokens == 5
    env = fake.environments()[0]["config"]
    assert env["networking"]["allowed_hosts"] == ["pypi.org"] and env["packages"]["pip"] == [
        "requests==2.32.0"
    ]


def test_agents_are_versioned_and_sessions_pin_a_version(fake: ManagedAgentsFake) -> None:
    c = client(fake)
    agent = c.beta.agents.create(name="coder", model="claude-sonnet-4-6", system="v1", metadata={"a": "1"})
    env = c.beta.environments.create(name="env")
    pinned = c.beta.sessions.create(
        agent={"type": "agent", "id": agent.id, "version": 1}, environment_id=env.id
    )
    updated = c.beta.agents.update(agent.id, version=1, system="v2", metadata={"a": None, "b": "2"})
    assert (updated.version, updated.system, updated.metadata) == (2, "v2", {"b": "2"})
    with pytest.raises(anthropic.ConflictError) as stale:
        c.beta.agents.update(agent.id, version=1, system="v3")
    assert stale.value.status_code == 409 and stale.value.type == "invalid_request_error"
    latest = c.beta.sessions.create(agent=agent.id, environment_id=env.id)
    assert (pinned.agent.version, pinned.agent.system) == (1, "v1")
    assert (latest.agent.version, latest.agent.system) == (2, "v2")
    assert c.beta.agents.retrieve(agent.id, version=1).system == "v1"
    assert [v.version for v in c.beta.agents.versions.list(agent.id)] == [1, 2]
    assert [s.id for s in c.beta.sessions.list(agent_id=agent.id, agent_version=1)] == [pinned.id]
    assert [s.id for s in c.beta.sessions.list()] == [latest.id, pinned.id]  # newest first
    assert c.beta.agents.archive(agent.id).archived_at is not None
    with pytest.raises(anthropic.BadRequestError):
        c.beta.sessions.create(agent=agent.id, environment_id=env.id)
    assert list(c.beta.agents.list()) == [] and len(list(c.beta.agents.list(include_archived=True))) == 1


def test_environments_refuse_a_duplicate_name_and_bad_networking_and_delete_once(
    fake: ManagedAgentsFake,
) -> None:
    c = client(fake)
    env = c.beta.environments.create(name="praisonai-0123abcd", config={"type": "cloud"})
    assert env.config.networking.type == "unrestricted" and env.config.packages.npm == []
    with pytest.raises(anthropic.ConflictError):
        c.beta.environments.create(name="praisonai-0123abcd", config={"type": "cloud"})
    with pytest.raises(anthropic.BadRequestError):
        c.beta.environments.create(name="x", config={"type": "cloud", "networking": {"type": "full"}})  # type: ignore[typeddict-item]
    with pytest.raises(anthropic.BadRequestError):  # packages need allow_package_managers under limited
        c.beta.environments.create(
            name="y", config={"type": "cloud", "networking": {"type": "limited"}, "packages": {"pip": ["a"]}}
        )
    assert [e.id for e in c.beta.environments.list()] == [env.id]
    assert c.beta.environments.retrieve(env.id).name == "praisonai-0123abcd"
    assert c.beta.environments.delete(env.id).type == "environment_deleted"
    with pytest.raises(anthropic.NotFoundError):
        c.beta.environments.delete(env.id)


def test_session_delete_is_a_404_the_second_time_and_archive_refuses_sends(fake: ManagedAgentsFake) -> None:
    c = client(fake)
    sid = new_session(fake, [])
    archived = new_session(fake, [])
    assert c.beta.sessions.archive(archived).archived_at is not None
    with pytest.raises(anthropic.ConflictError):
        c.beta.sessions.events.send(archived, events=[user("hi")])
    assert c.beta.sessions.delete(sid).type == "session_deleted"
    for call in (c.beta.sessions.delete, c.beta.sessions.retrieve, c.beta.sessions.events.list):
        with pytest.raises(anthropic.NotFoundError) as gone:
            call(sid)
        assert gone.value.type == "not_found_error" and gone.value.request_id is not None


def test_a_request_without_the_beta_header_is_refused(fake: ManagedAgentsFake) -> None:
    with pytest.raises(anthropic.BadRequestError) as refused:
        client(fake).beta.agents.list(extra_headers={"anthropic-beta": anthropic.omit})
    assert "managed-agents-2026-04-01" in str(refused.value.api_message)
    assert "anthropic-beta" not in fake.requests[0].headers
    assert list(client(fake).beta.agents.list()) == []  # the SDK sends the header itself
    assert fake.requests[1].headers["anthropic-beta"] == "managed-agents-2026-04-01"


@pytest.fixture
def keyed() -> Iterator[ManagedAgentsFake]:
    with ManagedAgentsFake(require_key=API_KEY) as server:
        yield server


def test_a_wrong_key_is_a_401(keyed: ManagedAgentsFake) -> None:
    assert list(client(keyed).beta.agents.list()) == []
    with pytest.raises(anthropic.AuthenticationError) as refused:
        client(keyed, api_key="wrong").beta.agents.list()
    assert refused.value.type == "authentication_error"


# ---- the scripted agent -------------------------------------------------------------------------


def test_requires_action_for_a_custom_tool_and_confirmations_then_end_turn_in_one_turn(
    fake: ManagedAgentsFake,
) -> None:
    c = client(fake)
    sid = new_session(fake, [
        custom_tool("lookup", {"q": "otter"}), say("checking"),
        tool("bash", {"command": "ls"}, result="a.txt"), tool("bash", {"command": "rm -rf /"}),
        say("done"), end_turn(),
    ])  # fmt: skip

    def answer(event_ids: list[str]) -> list[dict[str, Any]]:
        kinds = {e["id"]: e for e in fake.events(sid)}
        out = []
        for i in event_ids:
            if kinds[i]["type"] == "agent.custom_tool_use":
                out.append({"type": "user.custom_tool_result", "custom_tool_use_id": i,
                            "content": [{"type": "text", "text": "a mammal"}]})  # fmt: skip
            else:
                result = "allow" if kinds[i]["input"]["command"] == "ls" else "deny"
                out.append({"type": "user.tool_confirmation", "tool_use_id": i, "result": result})
        return out

    seen = run_turn(c, sid, [user("what is an otter?")], answer)
    idles = [e.stop_reason for e in seen if e.type == "session.status_idle"]
    assert [r.type for r in idles] == ["requires_action", "requires_action", "end_turn"]
    assert len(idles[0].event_ids) == 1 and len(idles[1].event_ids) == 2  # both confirmations at once
    uses = [e for e in seen if e.type == "agent.tool_use"]
    assert [u.evaluated_permission for u in uses] == ["ask", "ask"]
    results = [e for e in seen if e.type == "agent.tool_result"]
    assert [(r.tool_use_id, r.content[0].text) for r in results] == [
        (uses[0].id, "a.txt")
    ]  # only the allowed
    assert [e.content[0].text for e in seen if e.type == "agent.message"] == ["checking", "done"]


def test_a_partial_answer_re_emits_the_idle_with_the_rest(fake: ManagedAgentsFake) -> None:
    c = client(fake)
    sid = new_session(
        fake, [custom_tool("lookup", {"q": "a"}), custom_tool("lookup", {"q": "b"}), end_turn()]
    )

    def answer_one(event_ids: list[str]) -> list[dict[str, Any]]:
        return [{"type": "user.custom_tool_result", "custom_tool_use_id": event_ids[0]}]

    seen = run_turn(c, sid, [user("two lookups")], answer_one)
    idles = [e.stop_reason for e in seen if e.type == "session.status_idle"]
    assert [len(getattr(r, "event_ids", [])) for r in idles] == [2, 1, 0]
    assert idles[1].event_ids == idles[0].event_ids[1:]


def test_an_answer_naming_no_such_tool_call_is_a_400(fake: ManagedAgentsFake) -> None:
    sid = new_session(fake, [])
    with pytest.raises(anthropic.BadRequestError):
        client(fake).beta.sessions.events.send(
            sid, events=[{"type": "user.tool_confirmation", "tool_use_id": "sevt_nope", "result": "allow"}]
        )


def test_session_errors_retrying_then_terminal(fake: ManagedAgentsFake) -> None:
    c = client(fake)
    sid = new_session(fake, [session_error("retrying"), say("still here"), session_error("terminal")])
    seen = []
    with c.beta.sessions.events.stream(sid) as stream:
        c.beta.sessions.events.send(sid, events=[user("go")])
        for event in stream:
            seen.append(event)
            if event.type == "session.status_terminated":
                break
    assert [e.type for e in seen if e.type.startswith("session.")] == [
        "session.status_running", "session.error", "session.status_rescheduled", "session.status_running",
        "session.error", "session.status_terminated",
    ]  # fmt: skip
    errors = [e.error for e in seen if e.type == "session.error"]
    assert [(e.type, e.retry_status.type) for e in errors] == [
        ("model_overloaded_error", "retrying"),
        ("model_overloaded_error", "terminal"),
    ]
    assert c.beta.sessions.retrieve(sid).status == "terminated"
    with pytest.raises(anthropic.ConflictError):
        c.beta.sessions.events.send(sid, events=[user("again")])


def test_retries_exhausted_leaves_the_session_usable(fake: ManagedAgentsFake) -> None:
    c = client(fake)
    sid = new_session(fake, [session_error("exhausted"), say("resumed"), end_turn()])
    first = run_turn(c, sid, [user("go")])
    assert first[-1].stop_reason.type == "retries_exhausted"
    second = run_turn(c, sid, [user("continue")])
    assert [e.content[0].text for e in second if e.type == "agent.message"] == ["resumed"]
    assert second[-1].stop_reason.type == "end_turn"


def test_an_interrupt_mid_stream_ends_the_turn_and_drops_its_rest(fake: ManagedAgentsFake) -> None:
    c = client(fake)
    sid = new_session(fake, [say("partial"), wait(), say("never"), end_turn(), say("next turn"), end_turn()])
    seen = []
    with c.beta.sessions.events.stream(sid, event_deltas=["agent.message"]) as stream:
        c.beta.sessions.events.send(sid, events=[user("go")])
        for event in stream:
            seen.append(event)
            if event.type == "span.model_request_end":
                c.beta.sessions.events.send(sid, events=[{"type": "user.interrupt"}])
            if event.type == "session.status_idle":
                break
    assert [e.type for e in seen][-2:] == ["user.interrupt", "session.status_idle"]
    assert seen[-1].stop_reason.type == "end_turn"
    after = run_turn(c, sid, [user("and now?")])
    texts = [e["content"][0]["text"] for e in fake.events(sid) if e["type"] == "agent.message"]
    assert texts == ["partial", "next turn"] and after[-1].stop_reason.type == "end_turn"


def test_usage_spans_add_per_request_and_snapshots_are_cumulative(fake: ManagedAgentsFake) -> None:
    c = client(fake)
    sid = new_session(fake, [
        say("one", input_tokens=100, output_tokens=10, cache_read_tokens=50, cache_write_tokens=20),
        usage(), say("two", input_tokens=30, output_tokens=3), usage(active_seconds=4.5), end_turn(),
    ])  # fmt: skip
    seen = run_turn(c, sid, [user("count")])
    spans = [e.model_usage for e in seen if e.type == "span.model_request_end"]
    assert [(u.input_tokens, u.output_tokens, u.cache_read_input_tokens) for u in spans] == [
        (100, 10, 50),
        (30, 3, 0),
    ]
    snapshots = [e.usage for e in seen if e.type == "session.usage"]
    assert [(u.input_tokens, u.output_tokens) for u in snapshots] == [(100, 10), (130, 13)]
    assert snapshots[0].cache_creation.ephemeral_5m_input_tokens == 20
    final = c.beta.sessions.retrieve(sid).usage
    assert (final.input_tokens, final.output_tokens, final.cache_read_input_tokens) == (130, 13, 50)
    assert final.active_seconds == 4.5


def test_an_unknown_event_type_reaches_the_client_verbatim(fake: ManagedAgentsFake) -> None:
    c = client(fake)
    sid = new_session(fake, [emit({"type": "session.future_thing", "detail": {"x": 1}}), end_turn()])
    seen = run_turn(c, sid, [user("hi")])
    future = next(e for e in seen if e.type == "session.future_thing")
    assert future.model_dump()["detail"] == {"x": 1}  # built as some union member, but nothing is lost
    listed = [e for e in c.beta.sessions.events.list(sid) if e.type == "session.future_thing"]
    assert [e.id for e in listed] == [future.id]


# ---- faults ---------------------------------------------------------------------------------------


def test_a_dropped_stream_is_reconciled_with_events_list_without_duplicates(fake: ManagedAgentsFake) -> None:
    c = client(fake)
    sid = new_session(fake, [say("before", chunks=2), wait(), say("after"), end_turn()])
    fake.drop_stream(after_frames=4)
    seen: dict[str, Any] = {}
    order: list[str] = []

    def keep(event: Any) -> None:
        if not event.type.startswith("event_") and event.id not in seen:
            seen[event.id] = event
            order.append(event.id)

    # the SDK raises a cut stream bare until 2.17, which wraps it in its APIConnectionError
    cut = pytest.raises((httpx2.RemoteProtocolError, anthropic.APIConnectionError))
    with cut, c.beta.sessions.events.stream(sid, event_deltas=["agent.message"]) as stream:
        c.beta.sessions.events.send(sid, events=[user("go")])
        for event in stream:
            keep(event)
    assert len(order) < 4  # deltas counted among the frames written before the cut
    with c.beta.sessions.events.stream(sid) as stream:  # reconnect: stream first, then list
        fake.wait_until(lambda: any(e["type"] == "span.model_request_end" for e in fake.events(sid)))
        for event in c.beta.sessions.events.list(sid, limit=2):  # paged two by two
            keep(event)
        fake.release(sid)
        for event in stream:
            keep(event)
            if event.type == "session.status_idle":
                break
    assert order == [e["id"] for e in fake.events(sid)]  # complete, in order, each once


def test_a_5xx_after_a_recorded_send_duplicates_the_message_when_the_sdk_retries(
    fake: ManagedAgentsFake,
) -> None:
    sid = new_session(fake, [end_turn(), end_turn()])
    fake.fail(500, "events.send", after=True, retry_after="0.001")
    client(fake, max_retries=2).beta.sessions.events.send(sid, events=[user("once")])
    assert len(fake.calls("events.send")) == 2
    assert [e["type"] for e in fake.events(sid)].count("user.message") == 2  # no idempotency key


def test_a_5xx_before_the_send_took_effect_is_safe_to_retry(fake: ManagedAgentsFake) -> None:
    sid = new_session(fake, [end_turn()])
    fake.fail(503, "events.send", retry_after="0.001")
    client(fake, max_retries=2).beta.sessions.events.send(sid, events=[user("once")])
    assert [e["type"] for e in fake.events(sid)].count("user.message") == 1


def test_without_retries_a_5xx_on_send_is_reconciled_by_listing(fake: ManagedAgentsFake) -> None:
    c = client(fake)
    sid = new_session(fake, [end_turn()])
    fake.fail(500, "events.send", after=True)
    with pytest.raises(anthropic.InternalServerError) as failed:
        c.beta.sessions.events.send(sid, events=[user("once")])
    assert failed.value.status_code == 500 and failed.value.type == "api_error"
    sent = list(c.beta.sessions.events.list(sid, types=["user.message"], order="desc"))
    assert [e.content[0].text for e in sent] == ["once"]  # recorded: do not send it again


def test_a_429_carries_retry_after_and_the_sdk_honours_it(fake: ManagedAgentsFake) -> None:
    fake.fail(429, "*", retry_after="7")
    with pytest.raises(anthropic.RateLimitError) as limited:
        client(fake).beta.agents.list()
    assert limited.value.response.headers["retry-after"] == "7" and limited.value.type == "rate_limit_error"
    fake.fail(429, "agents.create", retry_after="0.001")
    client(fake, max_retries=1).beta.agents.create(name="a", model="m")
    assert len(fake.calls("agents.create")) == 2 and len(fake.agents()) == 1


def test_initial_events_start_a_turn_no_stream_can_see_and_list_shows_it(fake: ManagedAgentsFake) -> None:
    c = client(fake)
    fake.set_script([say("from the first event"), end_turn()])
    agent = c.beta.agents.create(name="coder", model="claude-sonnet-4-6")
    env = c.beta.environments.create(name="env")
    session = c.beta.sessions.create(agent=agent.id, environment_id=env.id, initial_events=[user("hi")])
    assert fake.wait_until(
        lambda: fake.session(session.id)["status"] == "idle" and len(fake.events(session.id)) > 2
    )
    listed = [e.type for e in c.beta.sessions.events.list(session.id)]
    assert listed[0] == "user.message" and listed[-1] == "session.status_idle"
    updated = c.beta.sessions.update(session.id, title="renamed", metadata={"k": "v"})
    assert updated.title == "renamed" and c.beta.sessions.list().data[0].metadata == {"k": "v"}
    assert fake.events(session.id)[-1]["type"] == "session.updated"


def test_deleting_a_session_tells_its_open_streams_and_ends_them(fake: ManagedAgentsFake) -> None:
    c = client(fake)
    sid = new_session(fake, [say("working"), wait()])
    seen = []
    with c.beta.sessions.events.stream(sid) as stream:
        c.beta.sessions.events.send(sid, events=[user("go")])
        for event in stream:
            seen.append(event.type)
            if event.type == "agent.message":
                client(fake).beta.sessions.delete(sid)
    assert seen[-1] == "session.deleted"  # and the stream ended by itself
