"""A hosted turn when the Managed Agents API misbehaves (issue 43 items 1, 3, 4), replayed with the
real ``anthropic`` client against the fake's fault modes, with a real sqlite store.

- A stream that sends only keep-alive pings, or its headers then nothing, is reopened after its
  read deadline and the missed events listed; past ``turn_timeout_s`` with nothing new the turn
  ends ``error`` in one sentence naming the API's base URL, and the session resumes.
- An event that is not JSON, not UTF-8, has a field of the wrong type, is of a type outside the
  API's namespaces, or is 10 MB: one sentence naming the base URL, the turn ends ``error``, and
  the next turn goes on.
- A 429/529 with ``retry-after``: honoured up to ``RETRY_AFTER_CAP_S``; past it one sentence
  with the time to retry (never an hour's sleep); a send that failed before taking effect is
  sent once.

Deadlines are a fraction of a second here; nothing sleeps past its deadline plus a margin.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.managed_agents import API_KEY, ManagedAgentsFake, Step, emit, end_turn, raw_frame, say, wait
from fakes.managed_agents.harness import Hosted, Make, hosted_sessions

from praisonai._errors import MalformedReplyError, ModelError, PraisonAIError, RemoteTimeoutError

TINY_TURN_TIMEOUT_S = 0.6


@pytest.fixture
def hosted(fake: ManagedAgentsFake, tmp_path: Path) -> Iterator[Make]:
    yield from hosted_sessions(fake, tmp_path)


def assert_ended_in_error(h: Hosted, raised: PraisonAIError) -> None:
    """One sentence naming the API by its base URL; the row says error (resumable), never running;
    the log closes the turn (a session.error, then an idle with retries_exhausted)."""
    text = str(raised)
    assert h.fake.url in text and "\n" not in text, text
    record = h.store.get_session(h.live.id)
    assert (record.status, record.stop_reason) == ("error", {"type": "retries_exhausted"})
    assert record.last_error is not None and h.fake.url in record.last_error["message"]
    tail = h.logged()[-2:]
    assert [e.type for e in tail] == ["session.error", "session.status_idle"]
    assert tail[1].stop_reason == "retries_exhausted"


# ---- 1. a quiet stream -------------------------------------------------------------------------


@pytest.mark.parametrize("pings", [True, False], ids=["pings-only", "headers-then-nothing"])
def test_a_quiet_stream_is_reopened_then_the_turn_ends_at_its_deadline(hosted: Make, pings: bool) -> None:
    h = hosted([wait(), say("after the wait"), end_turn()])
    h.fake.stall_stream(pings=pings, times=1000)
    with pytest.raises(RemoteTimeoutError) as raised:
        h.turn("go", turn_timeout_s=TINY_TURN_TIMEOUT_S)
    assert_ended_in_error(h, raised.value)
    assert f"{TINY_TURN_TIMEOUT_S:g} s" in str(raised.value)
    assert len(h.fake.calls("events.stream")) >= 2 and h.fake.calls("events.list")  # reopened, listed
    assert "session.status_running" in [e.type for e in h.logged()]  # what the listing found
    h.fake.heal()
    h.fake.release(h.sid)
    h.resume()
    result = h.turn(None)
    assert (result.stop_reason, result.text) == ("end_turn", "after the wait")
    assert h.store.get_session(h.live.id).status == "idle"


# ---- 3. malformed events -----------------------------------------------------------------------

NOT_JSON = raw_frame(b"event: agent.message\ndata: {this is not json\n\n")
NOT_UTF8 = raw_frame(b"event: agent.message\ndata: \xff\xfe\xfd\n\n")
WRONG_TYPE = emit({"type": "session.status_idle", "stop_reason": "end_turn"})
WRONG_TIME = raw_frame(
    b'event: agent.message\ndata: {"type":"agent.message","id":"sevt_t","processed_at":"yesterday"}\n\n'
)
WRONG_CONTENT = emit({"type": "agent.message", "content": "plain"})
WRONG_ID = raw_frame(b'event: agent.message\ndata: {"type":"agent.message","id":5,"content":[]}\n\n')
UNKNOWN_TYPE = emit({"type": "totally_unknown"})
HUGE_LOGGED = emit({"type": "agent.message", "content": [{"type": "text", "text": "x" * 10_000_000}]})
HUGE = raw_frame(
    b'event: agent.message\ndata: {"type":"agent.message","id":"sevt_big","content":[{"type":"text","text":"'
    + b"x" * 10_000_000
    + b'"}]}\n\n'
)


@pytest.mark.parametrize(
    ("bad", "said"),
    [
        (NOT_JSON, "not JSON"),
        (NOT_UTF8, "not JSON"),
        (WRONG_TYPE, "stop_reason"),
        (WRONG_TIME, "processed_at"),
        (WRONG_CONTENT, "content"),
        (WRONG_ID, "id is 5"),
        (UNKNOWN_TYPE, "totally_unknown"),
        (HUGE, "MiB"),
        (HUGE_LOGGED, "MiB"),
    ],
    ids=[
        "not-json",
        "not-utf8",
        "wrong-type",
        "wrong-time",
        "wrong-content",
        "wrong-id",
        "unknown-type",
        "10MB",
        "10MB-logged",
    ],
)
def test_a_malformed_event_ends_the_turn_in_one_sentence_and_the_session_goes_on(
    hosted: Make, bad: Step, said: str
) -> None:
    h = hosted([say("before"), bad, say("after"), end_turn(), say("next turn"), end_turn()])
    with pytest.raises(MalformedReplyError) as raised:
        h.turn("go")
    assert said in str(raised.value)
    assert_ended_in_error(h, raised.value)
    h.resume()
    result = h.turn("and now?")
    assert (result.stop_reason, result.text) == ("end_turn", "next turn")


def test_an_unknown_event_type_of_a_known_namespace_is_kept_verbatim(hosted: Make) -> None:
    h = hosted([emit({"type": "session.some_future_event", "detail": {"x": 1}}), say("fine"), end_turn()])
    assert h.turn("go").stop_reason == "end_turn"
    assert "session.some_future_event" in [e.type for e in h.logged()]


# ---- 4. rate limits ----------------------------------------------------------------------------


def test_a_retry_after_past_the_cap_is_said_with_the_time_not_slept(hosted: Make) -> None:
    h = hosted([say("hi"), end_turn()])
    h.fake.fail(429, "events.stream", retry_after="3600", times=5)
    with pytest.raises(ModelError) as raised:
        h.turn("go")
    text = str(raised.value)
    assert "3600 s" in text and "UTC" in text and h.fake.url in text, text
    assert len(h.fake.calls("events.stream")) == 1  # not retried against its word
    assert h.store.get_session(h.live.id).status == "error"


@pytest.mark.parametrize("status", [429, 529])
def test_a_retry_after_within_the_cap_is_honoured(
    hosted: Make, status: int, caplog: pytest.LogCaptureFixture
) -> None:
    h = hosted([say("hi"), end_turn()])
    h.fake.fail(status, "events.send", retry_after="1")  # before it took effect
    with caplog.at_level(logging.INFO, logger="praisonai.retry"):
        assert h.turn("once").stop_reason == "end_turn"
    waits = [r.getMessage() for r in caplog.records if r.getMessage().startswith("retrying sending")]
    assert len(waits) == 1 and " in 1.00s " in waits[0], waits
    assert len(h.fake.calls("events.send")) == 2
    assert [e["type"] for e in h.fake.events(h.sid)].count("user.message") == 1  # sent exactly once


# ---- the command line --------------------------------------------------------------------------


def test_managed_run_says_a_malformed_event_in_one_sentence_and_exits_4(
    home: Path, fake: ManagedAgentsFake
) -> None:
    fake.set_script([say("before"), NOT_JSON, say("after"), end_turn()])
    env = {
        **os.environ,
        "ANTHROPIC_BASE_URL": fake.url,
        "ANTHROPIC_API_KEY": API_KEY,
        "PRAISONAI_HOME": str(home),
    }
    run = subprocess.run(
        [sys.executable, "-m", "praisonai", "managed", "run", "go", "--provider", "anthropic"],
        env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 4, (run.stdout, run.stderr)
    assert "Traceback" not in run.stderr + run.stdout
    said = [line for line in (run.stdout + run.stderr).splitlines() if "not JSON" in line]
    assert len(said) == 1 and fake.url in said[0], (run.stdout, run.stderr)


def test_managed_run_turn_timeout_bounds_a_hosted_turn(home: Path, fake: ManagedAgentsFake) -> None:
    """``--turn-timeout`` reaches the hosted loop through ManagedAgent, as it does the local one."""
    fake.set_script([wait(), say("never"), end_turn()])
    fake.stall_stream(pings=True, times=1000)
    env = {
        **os.environ,
        "ANTHROPIC_BASE_URL": fake.url,
        "ANTHROPIC_API_KEY": API_KEY,
        "PRAISONAI_HOME": str(home),
    }
    run = subprocess.run(
        [sys.executable, "-m", "praisonai", "managed", "run", "go", "--provider", "anthropic",
         "--turn-timeout", f"{TINY_TURN_TIMEOUT_S:g}"],
        env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert run.returncode == 4, (run.stdout, run.stderr)
    assert f"{TINY_TURN_TIMEOUT_S:g} s" in run.stderr and "Traceback" not in run.stderr, run.stderr
