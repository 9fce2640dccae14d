"""The hosted turn loop (praisonai.managed.hosted._turn) driven through the real ``anthropic`` client
against the Managed Agents fake, with a real sqlite store: a streamed turn, requires_action answered
within one run, a dropped stream reconciled without duplicates, lost answers to a send, session
errors, interrupt, usage, unknown events, and pending confirmations resolved by a later run.

Every wait is on an event the fake produces; no timings.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from anthropic import Anthropic
from fakes.managed_agents import (
    API_KEY,
    ManagedAgentsFake,
    custom_tool,
    emit,
    end_turn,
    say,
    session_error,
    tool,
    usage,
    wait,
)
from fakes.managed_agents.harness import Hosted, Make, hosted_sessions

from praisonai._errors import ManagedSessionError
from praisonai.llm.types import Usage
from praisonai.managed.events import Event
from praisonai.managed.hosted._events import to_event
from praisonai.managed.hosted._turn import HostedTurn
from praisonai.managed.live._result import ManagedResult, ToolRequest


@pytest.fixture
def hosted(fake: ManagedAgentsFake, tmp_path: Path) -> Iterator[Make]:
    yield from hosted_sessions(fake, tmp_path)


def assert_logged_once(h: Hosted) -> None:
    """The local log holds every remote event once, in the remote order (the user messages we
    sent are logged under our own ids, before sending)."""
    ours = [e.id for e in h.logged() if e.id.startswith("sevt_")]
    theirs = [e["id"] for e in h.remote() if e["type"] != "user.message"]
    assert ours == theirs
    texts = lambda events: [e.text for e in events if e.type == "user.message"]  # noqa: E731
    assert texts(h.logged()) == texts([to_event(e) for e in h.remote()])


def test_a_full_turn_streams_deltas_and_logs_every_other_event(hosted: Make) -> None:
    h = hosted([say("Hello there", chunks=3), end_turn()])
    result = h.turn("hi")
    assert (result.text, result.stop_reason, result.status) == ("Hello there", "end_turn", "idle")
    deltas = [e for e in h.emitted if e.type == "event_delta"]
    assert "".join(d.text for d in deltas) == "Hello there" and len(deltas) == 3
    message = next(e for e in h.logged() if e.type == "agent.message")
    assert {d.data["event_id"] for d in deltas} == {message.id} and message.id.startswith("sevt_")
    assert [e.type for e in h.logged()] == [
        "user.message", "session.status_running", "span.model_request_start", "agent.message",
        "span.model_request_end", "session.status_idle",
    ]  # fmt: skip
    assert_logged_once(h)
    record = h.store.get_session(h.live.id)
    assert (record.status, record.stop_reason, record.turns) == ("idle", {"type": "end_turn"}, 1)
    assert [(u.turn, u.model, u.input_tokens) for u in h.store.turn_usage(h.live.id)] == [
        (1, "claude-sonnet-4-6", 10)
    ]


def test_requires_action_is_answered_and_the_turn_goes_on_to_end_turn(
    hosted: Make,
) -> None:
    h = hosted([
        custom_tool("lookup", {"q": "otter"}), say("checking"),
        tool("bash", {"command": "ls"}, result="a.txt"), tool("bash", {"command": "rm -rf /"}),
        say("done"), end_turn(),
    ])  # fmt: skip
    asked: list[ToolRequest] = []

    def confirm(request: ToolRequest) -> str:
        asked.append(request)
        return "allow" if request.input["command"] == "ls" else "deny"

    result = h.turn("what is an otter?", confirm=confirm, on_custom_tool=lambda name, args: "a mammal")
    assert (result.stop_reason, result.text, result.pending) == ("end_turn", "done", ())
    assert [r.input["command"] for r in asked] == ["ls", "rm -rf /"]
    sent = {e["type"]: e for e in h.remote() if e["type"] == "user.custom_tool_result"}
    assert sent["user.custom_tool_result"]["content"] == [{"type": "text", "text": "a mammal"}]
    confirmations = [e for e in h.remote() if e["type"] == "user.tool_confirmation"]
    assert [(c["result"], c.get("deny_message")) for c in confirmations] == [
        ("allow", None), ("deny", "denied by the user")
    ]  # fmt: skip
    assert [e.text for e in h.logged() if e.type == "agent.tool_result"] == ["a.txt"]
    idles = [e.stop_reason for e in h.logged() if e.type == "session.status_idle"]
    assert idles == ["requires_action", "requires_action", "end_turn"]
    assert_logged_once(h)


def test_a_custom_tool_that_fails_is_answered_as_an_error(hosted: Make) -> None:
    h = hosted([custom_tool("lookup", {"q": "x"}), say("sorry"), end_turn()])

    async def broken(name: str, args: Any) -> str:
        raise RuntimeError("no dictionary")

    assert h.turn("look it up", on_custom_tool=broken).stop_reason == "end_turn"
    answer = next(e for e in h.remote() if e["type"] == "user.custom_tool_result")
    assert answer["is_error"] and "RuntimeError: no dictionary" in answer["content"][0]["text"]


def turn_released_after_first_request(h: Hosted) -> ManagedResult:
    """``h.turn("go")`` while a thread releases the script's wait() once the first model request
    is over, whether the stream is back or not."""

    def release() -> None:
        h.fake.wait_until(lambda: any(e["type"] == "span.model_request_end" for e in h.remote()))
        h.fake.release(h.sid)

    releaser = threading.Thread(target=release)
    releaser.start()
    try:
        return h.turn("go")
    finally:
        releaser.join()


def test_a_dropped_stream_is_reconnected_and_reconciled_without_duplicates(
    hosted: Make,
) -> None:
    h = hosted([say("before", chunks=2), wait(), say("after"), end_turn()])
    h.fake.drop_stream(after_frames=4)  # mid-message: its deltas started, the message not sent yet
    result = turn_released_after_first_request(h)
    assert (result.stop_reason, result.text) == ("end_turn", "after")
    assert len(h.fake.calls("events.stream")) == 2 and h.fake.calls("events.list")
    assert_logged_once(h)


def test_a_catch_up_that_fails_is_tried_again_with_a_new_stream(hosted: Make) -> None:
    h = hosted([say("before", chunks=2), wait(), say("after"), end_turn()])
    h.fake.drop_stream(after_frames=4)
    h.fake.fail(503, "events.list", times=3, retry_after="0.001")  # the SDK's two retries too
    result = turn_released_after_first_request(h)
    assert (result.stop_reason, result.text) == ("end_turn", "after")
    assert len(h.fake.calls("events.stream")) == 3  # the first catch-up failed: reopened, listed again
    assert_logged_once(h)


@pytest.mark.parametrize("after", [True, False], ids=["answer-lost", "not-taken"])
def test_a_5xx_on_send_never_duplicates_the_message(hosted: Make, after: bool) -> None:
    h = hosted([say("hi"), end_turn()])
    h.fake.fail(500, "events.send", after=after)
    assert h.turn("once").stop_reason == "end_turn"
    assert [e["type"] for e in h.remote()].count("user.message") == 1
    assert [e.type for e in h.logged()].count("user.message") == 1
    assert len(h.fake.calls("events.send")) == (1 if after else 2)  # found in the log: not sent again
    assert_logged_once(h)


def test_a_retried_session_error_is_logged_and_the_turn_goes_on(hosted: Make) -> None:
    h = hosted([session_error("retrying"), say("still here"), end_turn()])
    result = h.turn("go")
    assert (result.stop_reason, result.text) == ("end_turn", "still here")
    error = next(e for e in h.logged() if e.type == "session.error")
    assert error.data["error"]["retry_status"] == {"type": "retrying"}
    assert "session.status_rescheduled" in [e.type for e in h.logged()]


def test_a_terminal_session_error_is_persisted_then_raised(hosted: Make) -> None:
    h = hosted([say("working"), session_error("terminal", error_type="billing_error", message="no credit")])
    with pytest.raises(ManagedSessionError) as raised:
        h.turn("go")
    assert (raised.value.error_type, raised.value.retry_status) == ("billing_error", "terminal")
    assert "no credit" in str(raised.value)
    record = h.store.get_session(h.live.id)
    assert record.status == "terminated" and record.last_error is not None
    assert record.last_error["type"] == "billing_error"
    assert [e.type for e in h.logged()][-2:] == ["session.error", "session.status_terminated"]
    assert_logged_once(h)


def test_retries_exhausted_raises_then_a_second_run_continues(hosted: Make) -> None:
    h = hosted([session_error("exhausted"), say("resumed"), end_turn()])
    with pytest.raises(ManagedSessionError) as raised:
        h.turn("go")
    assert raised.value.retry_status == "exhausted"
    record = h.store.get_session(h.live.id)
    assert (record.status, record.stop_reason) == ("error", {"type": "retries_exhausted"})
    h.resume()
    result = h.turn("continue")
    assert (result.stop_reason, result.status, result.text) == ("end_turn", "idle", "resumed")
    assert h.store.get_session(h.live.id).turns == 2
    assert_logged_once(h)


def test_an_interrupt_mid_stream_ends_the_turn_interrupted(hosted: Make) -> None:
    h = hosted([say("partial"), wait(), say("never"), end_turn(), say("next turn"), end_turn()])

    def interrupt(turn: HostedTurn, ev: Event) -> None:
        if ev.type == "span.model_request_end":
            turn.interrupt()

    result = h.turn("go", during=interrupt)
    assert (result.stop_reason, result.status, result.text) == ("interrupted", "interrupted", "partial")
    assert h.store.get_session(h.live.id).status == "interrupted"
    interrupts = [e for e in h.logged() if e.type == "user.interrupt"]
    assert len(interrupts) == 1 and interrupts[0].id.startswith("sevt_")
    after = h.turn("and now?")
    assert (after.stop_reason, after.text) == ("end_turn", "next turn")
    assert_logged_once(h)


def test_usage_adds_per_request_and_snapshots_replace(hosted: Make) -> None:
    h = hosted([
        say("one", input_tokens=100, output_tokens=10, cache_read_tokens=50, cache_write_tokens=20),
        usage(), say("two", input_tokens=30, output_tokens=3), usage(active_seconds=4.5), end_turn(),
    ])  # fmt: skip
    result = h.turn("count")
    assert result.usage == Usage(130, 13, 2, 50, 20)
    rows = h.store.turn_usage(h.live.id)
    assert [(r.input_tokens, r.output_tokens, r.requests) for r in rows] == [(130, 13, 2)]
    record = h.store.get_session(h.live.id)
    assert (record.usage["input_tokens"], record.usage["output_tokens"]) == (130, 13)  # not 260
    assert record.usage["cache_read_input_tokens"] == 50
    assert (h.live.usage.input_tokens, h.live.usage.cache_write_tokens) == (130, 20)
    snapshots = [e for e in h.logged() if e.type == "session.usage"]
    assert [s.data["usage"]["input_tokens"] for s in snapshots] == [100, 130]


def test_an_unknown_event_type_is_logged_verbatim(hosted: Make) -> None:
    h = hosted([emit({"type": "session.future_thing", "detail": {"x": 1}}), end_turn()])
    assert h.turn("hi").stop_reason == "end_turn"
    future = next(e for e in h.logged() if e.type == "session.future_thing")
    remote = next(e for e in h.remote() if e["type"] == "session.future_thing")
    assert future.id == remote["id"] and dict(future.data) == {"detail": {"x": 1}}


def test_without_a_confirmation_callback_the_tool_is_denied(hosted: Make) -> None:
    h = hosted([tool("bash", {"command": "ls"}), say("ok, not then"), end_turn()])
    result = h.turn("list files")
    assert (result.stop_reason, result.text) == ("end_turn", "ok, not then")
    confirmation = next(e for e in h.remote() if e["type"] == "user.tool_confirmation")
    assert confirmation["result"] == "deny"
    assert "agent.tool_result" not in [e["type"] for e in h.remote()]


def test_a_confirmation_left_pending_is_resolved_by_a_later_run(hosted: Make) -> None:
    h = hosted([tool("bash", {"command": "ls"}, result="a.txt"), say("done"), end_turn()])
    first = h.turn("list files", confirm=lambda request: None)
    use = next(e for e in h.logged() if e.type == "agent.tool_use")
    expected = {"event_id": use.id, "kind": "confirmation", "name": "bash", "input": {"command": "ls"}}
    assert (first.stop_reason, first.status) == ("requires_action", "requires_action")
    assert first.pending == (expected,)
    record = h.store.get_session(h.live.id)
    assert (record.status, record.pending) == ("requires_action", (expected,))
    assert "user.tool_confirmation" not in [e["type"] for e in h.remote()]
    h.resume()

    async def allow(request: ToolRequest) -> bool:
        return request.tool_use_id == use.id

    second = h.turn(None, confirm=allow)
    assert (second.stop_reason, second.status, second.text) == ("end_turn", "idle", "done")
    assert second.pending == ()
    assert h.store.get_session(h.live.id).pending == ()
    assert [e.text for e in h.logged() if e.type == "agent.tool_result"] == ["a.txt"]
    assert_logged_once(h)


def test_a_stream_closed_right_after_requires_action_is_not_a_failure(hosted: Make) -> None:
    h = hosted([custom_tool("lookup", {"q": "otter"}), say("a mammal, then"), end_turn()])
    h.fake.drop_stream(after_frames=4)  # user.message, running, the tool use, the idle: then cut
    result = h.turn("what is an otter?", on_custom_tool=lambda name, args: "a mammal")
    assert (result.stop_reason, result.text) == ("end_turn", "a mammal, then")
    assert len(h.fake.calls("events.stream")) == 2
    assert_logged_once(h)


def test_a_session_deleted_mid_turn_ends_it_terminated(hosted: Make) -> None:
    h = hosted([say("working"), wait()])

    def delete(turn: HostedTurn, ev: Event) -> None:
        if ev.type == "agent.message":
            with Anthropic(base_url=h.fake.url, api_key=API_KEY, max_retries=0) as c:
                c.beta.sessions.delete(h.sid)

    result = h.turn("go", during=delete)
    assert (result.stop_reason, result.status) == ("terminated", "terminated")
    assert [e.type for e in h.logged()][-1] == "session.deleted"
    assert h.store.get_session(h.live.id).status == "terminated"


def test_a_run_with_nothing_to_send_only_catches_up(hosted: Make) -> None:
    h = hosted([say("hi"), end_turn()])
    h.turn("hello")
    before = [e.id for e in h.logged()]
    again = h.turn(None)
    assert (again.stop_reason, again.status) == ("end_turn", "idle")
    assert [e.id for e in h.logged()] == before
    assert len(h.fake.calls("events.send")) == 1


def test_a_prompt_while_a_confirmation_is_pending_answers_it_first(hosted: Make) -> None:
    h = hosted([tool("bash", {"command": "ls"}, result="a.txt"), say("done"), end_turn(),
                say("next"), end_turn()])  # fmt: skip
    assert h.turn("list files", confirm=lambda request: None).stop_reason == "requires_action"
    result = h.turn("and then?", confirm=lambda request: True)
    assert (result.stop_reason, result.text) == ("end_turn", "next")
    kinds = [e.type for e in h.logged()]
    assert kinds.index("user.tool_confirmation") < kinds.index("agent.tool_result") < len(kinds) - 1
    texts = [e.text for e in h.logged() if e.type in ("user.message", "agent.message")]
    assert texts == ["list files", "done", "and then?", "next"]  # the prompt after the answered turn
    assert_logged_once(h)


def test_a_terminated_session_takes_no_prompt(hosted: Make) -> None:
    h = hosted([session_error("terminal")])
    with pytest.raises(ManagedSessionError):
        h.turn("go")
    result = h.turn("again?")
    assert (result.stop_reason, result.status) == ("terminated", "terminated")
    assert len(h.fake.calls("events.send")) == 1


def test_a_prompt_sent_by_a_process_that_stopped_is_logged_once_and_its_turn_read_out(hosted: Make) -> None:
    h = hosted([say("working"), wait(), say("done"), end_turn()])
    prompt = {"type": "user.message", "content": [{"type": "text", "text": "go"}]}
    h.live.record(Event("user.message", {"content": prompt["content"]}))
    h.live.flush()  # logged, then sent, then the process stopped before reading anything
    with Anthropic(base_url=h.fake.url, api_key=API_KEY, max_retries=0) as c:
        c.beta.sessions.events.send(h.sid, events=[prompt])  # type: ignore[list-item]
    assert h.fake.wait_until(lambda: any(e["type"] == "agent.message" for e in h.remote()))

    def release(turn: HostedTurn, ev: Event) -> None:  # caught up (its stream is open by then)
        if ev.type == "agent.message":
            h.fake.release(h.sid)

    h.resume()
    result = h.turn(None, during=release)
    assert (result.stop_reason, result.text) == ("end_turn", "done")
    assert_logged_once(h)


def test_without_deltas_and_with_a_tool_server_around_the_turn(hosted: Make) -> None:
    h = hosted([custom_tool("lookup", {"q": "x"}), say("served"), end_turn()])
    seen: list[str] = []

    @contextlib.asynccontextmanager
    async def serve_tools() -> AsyncIterator[None]:
        seen.append("up")
        yield
        seen.append(f"down after {len(h.fake.events(h.sid))} events")

    result = h.turn("go", deltas=False, serve_tools=serve_tools, on_custom_tool=lambda name, args: "ok")
    assert (result.stop_reason, result.text) == ("end_turn", "served")
    assert seen == ["up", f"down after {len(h.remote())} events"]  # around the whole turn
    assert not [e for e in h.emitted if e.ephemeral]
    assert "event_deltas" not in h.fake.calls("events.stream")[0].query
