"""A model API that misbehaves, read by the real openai and anthropic SDKs through the local managed
loop (tests/fakes/faulty_model.py serves the damaged wire). Every fault ends the turn as an error:
one sentence naming the remote by the base URL in use (``OPENAI_BASE_URL``/``ANTHROPIC_BASE_URL``,
not api.openai.com), the session stored as ``error`` and resumable, any partial text kept once,
marked partial, and never ``end_turn``. Deadlines are tiny here; each wait is bounded by its
deadline plus a margin."""

from __future__ import annotations

import concurrent.futures
import json
import socket
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from fakes.faulty_model import End, FaultyModel, cut, frames

from praisonai._errors import (
    IncompleteReplyError,
    MalformedReplyError,
    ModelError,
    PraisonAIError,
    ProviderUnavailableError,
    RemoteTimeoutError,
)
from praisonai.llm import Completion, UserMessage, _bounds, make_client, resolve_model
from praisonai.llm.testing import API_KEY, ScriptedCall
from praisonai.managed import ManagedAgent
from praisonai.managed.events import Event

MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-x"}
#: The deadline the silence tests set; the others set a long one (a 10 MB event takes a while to
#: read on a busy machine); and the most a test waits for a turn past its deadline.
DEADLINE_S = 0.5
LONG_DEADLINE_S = 30.0
MARGIN_S = 10.0


@pytest.fixture
def model(home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FaultyModel]:
    """The faulty server, named by the SDKs' own environment variables (no base_url= given)."""
    with FaultyModel() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
        monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
        yield server


def _turn(
    api: str, model: FaultyModel, script: list[str], end: End = "close", deadline: float = LONG_DEADLINE_S
) -> tuple[ManagedAgent, Exception]:
    """One turn against ``script``; returns the agent (closed by the caller) and what it raised."""
    model.answer(script, end=end)
    config = {"model": MODELS[api], "environment": False}
    agent = ManagedAgent("local", "local", config, turn_timeout_s=deadline)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        future = pool.submit(agent.run, "hi")
        try:
            error = future.exception(timeout=deadline + MARGIN_S)
        except concurrent.futures.TimeoutError:
            model.stop.set()  # ends the hanging answer: the turn can end and the pool close
            pytest.fail(f"the turn was still waiting {MARGIN_S} s after its {deadline} s deadline")
    if error is None:
        agent.close()
        pytest.fail(f"the turn ended {future.result().stop_reason!r} instead of failing")
    assert isinstance(error, Exception)
    return agent, error


def _events(agent: ManagedAgent) -> list[Event]:
    assert agent.session_id is not None
    return [s.event for s in agent.store.events(agent.session_id)]


def _check_failed_turn(
    agent: ManagedAgent, error: Exception, model: FaultyModel, partial: str | None
) -> None:
    """The error is one sentence of ours naming the server; the session is ``error``, never
    ended ``end_turn``, with ``partial`` kept once and marked; the next turn runs."""
    message = str(error)
    assert isinstance(error, PraisonAIError), f"{type(error).__name__}: {message}"
    assert model.url in message and "api.openai.com" not in message, message
    assert "\n" not in message and "Traceback" not in message, message
    events = _events(agent)
    stops = [e.stop_reason for e in events if e.type == "session.status_idle"]
    assert stops == ["retries_exhausted"], stops
    assert agent.retrieve_session().status == "error"  # type: ignore[union-attr]
    messages = [e for e in events if e.type == "agent.message"]
    if partial is None:
        assert messages == []
    else:
        assert [(m.text, m.data.get("partial")) for m in messages] == [(partial, True)]
    model.answer(frames("openai" if "gpt" in agent.config.model else "anthropic", "all good"))
    try:
        again = agent.run("again")
    finally:
        agent.close()
    assert (again.stop_reason, again.text) == ("end_turn", "all good")


@pytest.mark.parametrize("api", MODELS)
def test_a_stream_that_closes_before_its_end_is_an_error_and_keeps_its_text_once(
    model: FaultyModel, api: str
) -> None:
    agent, error = _turn(api, model, cut(api))
    assert isinstance(error, IncompleteReplyError), error
    _check_failed_turn(agent, error, model, "partial text")


@pytest.mark.parametrize("api", MODELS)
def test_a_cut_reply_never_runs_its_tool_calls(model: FaultyModel, api: str) -> None:
    call = ScriptedCall("execute_command", {"command": "echo ran"})
    whole = frames(api, "", calls=(call,))
    agent, error = _turn(api, model, whole[:-3] if api == "openai" else whole[:-2])  # no finish/stop
    assert isinstance(error, IncompleteReplyError), error
    assert not [e for e in _events(agent) if e.type.startswith("agent.tool")]
    _check_failed_turn(agent, error, model, None)


@pytest.mark.parametrize("api", MODELS)
def test_a_refusal_ends_the_turn_as_a_refusal_not_end_turn(model: FaultyModel, api: str) -> None:
    """OpenAI's ``content_filter``, Anthropic's ``refusal`` (main: ``end_turn``, exit 0)."""
    said = ("finish_reason", "content_filter") if api == "openai" else ("stop_reason", "refusal")
    normal = f'"{said[0]}": "{"stop" if api == "openai" else "end_turn"}"'
    model.answer([f.replace(normal, f'"{said[0]}": "{said[1]}"') for f in frames(api, "I won't.")])
    agent = ManagedAgent("local", "local", {"model": MODELS[api], "environment": False})
    try:
        refused = agent.run("hi")
        model.answer(frames(api, "all good"))
        again = agent.run("again")
    finally:
        agent.close()
    assert (refused.stop_reason, refused.text) == ("refusal", "I won't.")
    assert again.stop_reason == "end_turn"


def _length(api: str) -> list[str]:
    """A reply cut at the output token limit, with nothing usable in it."""
    whole = frames(api, "")
    if api == "openai":
        return [f.replace('"finish_reason": "stop"', '"finish_reason": "length"') for f in whole]
    return [f.replace('"stop_reason": "end_turn"', '"stop_reason": "max_tokens"') for f in whole]


@pytest.mark.parametrize("api", MODELS)
def test_a_reply_cut_at_the_token_limit_with_nothing_usable_is_an_error(model: FaultyModel, api: str) -> None:
    agent, error = _turn(api, model, _length(api))
    assert isinstance(error, IncompleteReplyError) and "limit" in str(error), error
    _check_failed_turn(agent, error, model, None)


def test_a_stream_of_chunks_without_choices_is_an_error(model: FaultyModel) -> None:
    empty = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": []}
    agent, error = _turn("openai", model, [f"data: {json.dumps(empty)}\n\n"] * 3 + ["data: [DONE]\n\n"])
    assert isinstance(error, IncompleteReplyError) and "no choices" in str(error), error
    _check_failed_turn(agent, error, model, None)


def _damaged(api: str, kind: str) -> list[str]:
    """A reply whose third frame is replaced by ``kind`` of damage."""
    whole = frames(api)
    if kind == "not JSON":
        bad = (
            "data: {not json at all\n\n" if api == "openai" else "event: content_block_delta\ndata: {oops\n\n"
        )
    elif kind == "wrong type":
        head = '{"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m", '
        bad = (
            f'data: {head}"choices": "many"}}\n\n'
            if api == "openai"
            else 'event: content_block_delta\ndata: {"type": "content_block_delta", "index": "zero", '
            '"delta": {"type": "text_delta", "text": 7}}\n\n'
        )
    else:  # a 10 MB event
        text = "x" * (10 << 20)
        bad = (
            f'data: {{"choices": [{{"index": 0, "delta": {{"content": "{text}"}}}}]}}\n\n'
            if api == "openai"
            else f'event: content_block_delta\ndata: {{"type": "content_block_delta", "index": 0, '
            f'"delta": {{"type": "text_delta", "text": "{text}"}}}}\n\n'
        )
    at = 1 if api == "openai" else 3
    return [*whole[:at], bad, *whole[at:]]


@pytest.mark.parametrize("kind", ["not JSON", "wrong type", "10 MB event"])
@pytest.mark.parametrize("api", MODELS)
def test_malformed_stream_data_is_one_sentence_naming_the_remote(
    model: FaultyModel, api: str, kind: str
) -> None:
    agent, error = _turn(api, model, _damaged(api, kind))
    assert isinstance(error, MalformedReplyError), f"{type(error).__name__}: {str(error)[:300]}"
    _check_failed_turn(agent, error, model, None)


@pytest.mark.parametrize("api", MODELS)
def test_an_error_event_in_the_stream_is_one_sentence(model: FaultyModel, api: str) -> None:
    """An error reported mid-stream (main: openai's bare APIError, a traceback and exit 1)."""
    error_event = (
        'data: {"error": {"message": "the server is overloaded", "type": "server_error"}}\n\n'
        if api == "openai"
        else 'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error", '
        '"message": "the server is overloaded"}}\n\n'
    )
    agent, error = _turn(api, model, [*frames(api)[:2], error_event])
    assert isinstance(error, ModelError) and "overloaded" in str(error), error
    _check_failed_turn(agent, error, model, "partial text" if api == "openai" else None)


@pytest.mark.parametrize("end", ["hang", "ping"])
@pytest.mark.parametrize("api", MODELS)
def test_a_silent_stream_ends_at_the_turn_deadline(model: FaultyModel, api: str, end: End) -> None:
    """Headers then nothing, or keep-alives only: the turn ends at turn_timeout_s, not the SDK's 600 s."""
    script = [] if end == "hang" else frames(api)[:1]
    agent, error = _turn(api, model, script, end, DEADLINE_S)
    assert isinstance(error, RemoteTimeoutError) and f"{DEADLINE_S:g} s" in str(error), error
    _check_failed_turn(agent, error, model, None)


@pytest.mark.parametrize("api", MODELS)
def test_small_events_past_the_cap_together_are_read_whole(
    model: FaultyModel, api: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cap is per event: a reply of small deltas larger in all than the cap is not refused
    (the cap is lowered to 64 KiB to keep the reply small)."""
    monkeypatch.setattr(_bounds, "MAX_REMOTE_EVENT_BYTES", 64 << 10)
    text = "abcdefgh" * (32 << 10)  # 256 KiB
    model.answer(frames(api, text, chunks=128))  # 2 KiB a delta

    async def read() -> list[str | Completion]:
        client = make_client(resolve_model(MODELS[api]), turn_timeout_s=LONG_DEADLINE_S)
        try:
            return [item async for item in client.stream("", [UserMessage("hi")], [])]
        finally:
            await client.aclose()

    *pieces, final = anyio.run(read)
    assert len(pieces) == 128 and isinstance(final, Completion) and final.text == text
    model.answer(frames(api, "x" * (65 << 10)))  # one event just past the lowered cap
    with pytest.raises(MalformedReplyError, match="larger than"):
        anyio.run(read)


@pytest.mark.parametrize("api", MODELS)
def test_an_unreachable_endpoint_is_named_as_the_environment_sets_it(
    api: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``OPENAI_BASE_URL``/``ANTHROPIC_BASE_URL`` pointing elsewhere: the error names that, not
    api.openai.com (main said "model 'gpt-4o-mini' at api.openai.com: Connection error.")."""
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    monkeypatch.setenv("OPENAI_BASE_URL" if api == "openai" else "ANTHROPIC_BASE_URL", url)
    monkeypatch.setenv("OPENAI_API_KEY" if api == "openai" else "ANTHROPIC_API_KEY", API_KEY)

    async def read() -> None:
        client = make_client(resolve_model(MODELS[api]))
        try:
            async for _ in client.stream("", [UserMessage("hi")], []):
                pass
        finally:
            await client.aclose()

    with pytest.raises(ProviderUnavailableError) as caught:
        anyio.run(read)
    assert url in str(caught.value) and "api." not in str(caught.value), caught.value


@pytest.mark.parametrize("api", MODELS)
def test_a_retry_after_past_the_cap_is_said_with_the_time_not_slept(model: FaultyModel, api: str) -> None:
    """The SDKs sleep whatever retry-after says (an hour): past the cap, one sentence, at once."""
    model.limit(429, "3600", times=10)
    agent, error = _turn(api, model, frames(api, "never"))
    agent.close()
    message = str(error)
    assert isinstance(error, ModelError) and "3600 s" in message and "try again at" in message, message
    assert model.requests == 1  # not retried


@pytest.mark.parametrize("api", MODELS)
def test_a_retry_after_within_the_cap_is_waited_out_and_sent_again(model: FaultyModel, api: str) -> None:
    model.limit(529 if api == "anthropic" else 429, "0.2", times=1)
    model.answer(frames(api, "after the wait"))
    agent = ManagedAgent("local", "local", {"model": MODELS[api], "environment": False})
    try:
        result = agent.run("hi")
    finally:
        agent.close()
    assert (result.stop_reason, result.text, model.requests) == ("end_turn", "after the wait", 2)
