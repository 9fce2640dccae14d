"""``praisonai managed run`` when the model misbehaves (tests/fakes/faulty_model.py, read by the real
SDKs in a child process): one sentence naming the endpoint, exit 4, no traceback, the session kept
as ``error``; ``--turn-timeout`` and its default are in the help."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.faulty_model import FaultyModel, cut

from praisonai.llm.testing import API_KEY
from praisonai.managed.store import SqliteSessionStore


@pytest.fixture
def model(home: Path) -> Iterator[FaultyModel]:
    with FaultyModel() as server:
        yield server


def test_a_cut_reply_and_a_silent_stream_are_one_sentence_and_exit_4(model: FaultyModel, home: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_", "OPENAI_"))}
    env.update(PRAISONAI_HOME=str(home), OPENAI_BASE_URL=f"{model.url}/v1", OPENAI_API_KEY=API_KEY)
    env.update(ANTHROPIC_BASE_URL=model.url, ANTHROPIC_API_KEY=API_KEY)
    command = [sys.executable, "-m", "praisonai", "managed", "run", "hi", "--compute", "local"]
    for script, end, options, fragment in (
        (cut("openai"), "close", ["--model", "gpt-4o-mini"], "closed its stream before the reply's end"),
        ([], "hang", ["--model", "claude-x", "--turn-timeout", "1"], "sent nothing for 1 s"),
    ):
        model.answer(script, end=end)  # type: ignore[arg-type]
        run = subprocess.run(
            [*command, *options], capture_output=True, env=env, timeout=60, stdin=subprocess.DEVNULL
        )
        err = run.stderr.decode(errors="replace")
        assert run.returncode == 4, err
        assert fragment in err and model.url in err and "Traceback" not in err, err
        assert "the session is kept: try again with: praisonai managed sessions resume" in err, err
    with SqliteSessionStore() as store:
        assert [s.status for s in store.list_sessions()] == ["error", "error"]


def test_turn_timeout_is_in_the_help_with_its_default() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "praisonai", "managed", "run", "--help"], capture_output=True, timeout=60
    )
    out = " ".join(run.stdout.decode().split())
    assert "--turn-timeout" in out and "default 300" in out, out
