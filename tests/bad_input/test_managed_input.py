"""Bad input to ``praisonai managed``: one sentence, exit 2, no traceback, and nothing stored and
no model request made (the scripted model counts them).

Each row is the arguments (bytes where a shell would pass undecodable ones) and the fragment the
one stderr line must hold.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from praisonai.llm.testing import API_KEY, ScriptedLLM, reply
from praisonai.managed.store import SqliteSessionStore

RUN = (b"run", b"--compute", b"local", b"--model", b"gpt-4o-mini")
CASES: list[tuple[str, tuple[bytes, ...], str]] = [
    ("non-UTF-8 prompt", (*RUN, b"hi \xff"), "the prompt cannot be sent: it is not valid UTF-8 (byte 0xff"),
    ("escape in title", (*RUN, b"hi", b"--title", b"t\x1b]0;pwned\x07"), "--title cannot be used"),
    ("CSI in title", (*RUN, b"hi", b"--title", b"a\x1b[2Jb"), "control character U+001B"),
    ("C1 in title", (*RUN, b"hi", b"--title", "a\x9bb".encode()), "control character U+009B"),
    ("bidi in title", (*RUN, b"hi", b"--title", "a\u202eb".encode()), "control character U+202E"),
    ("newline in title", (*RUN, b"hi", b"--title", b"a\nb"), "control character U+000A"),
    ("non-UTF-8 title", (*RUN, b"hi", b"--title", b"a\xfe"), "byte 0xfe"),
    ("escape in name", (*RUN, b"hi", b"--name", b"x\x1b[31m"), "control character U+001B"),
    ("packages on local", (*RUN, b"hi", b"--packages", b"pip:requests"), "cannot honour packages"),
    ("non-UTF-8 resume", (b"sessions", b"resume", b"msess_" + b"0" * 26, b"\xff"), "not valid UTF-8"),
    ("huge max-turns", (*RUN, b"hi", b"--max-turns", b"99999999999999999999999"), "max_turns: must be less"),
    ("huge budget", (*RUN, b"hi", b"--budget-tokens", b"99999999999999999999999"), "budget_tokens: must be"),
    ("zero max-turns", (*RUN, b"hi", b"--max-turns", b"0"), "max_turns: must be greater"),
    ("negative turn timeout", (*RUN, b"hi", b"--turn-timeout", b"-1"), "--turn-timeout must be a finite"),
    ("NaN turn timeout", (*RUN, b"hi", b"--turn-timeout", b"nan"), "--turn-timeout must be a finite"),
    ("huge limit", (b"sessions", b"list", b"--limit", b"99999999999999999999999"), "limit must be at most"),
    ("limit in exponent form", (b"sessions", b"list", b"--limit", b"1e20"), "Invalid value for '--limit'"),
]


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        server.set_script([reply("never asked")])
        yield server


@pytest.mark.parametrize(("args", "fragment"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_managed_refuses_bad_input_before_storing_or_asking_the_model(
    home: Path, llm: ScriptedLLM, args: tuple[bytes, ...], fragment: str
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_"))}
    env.update(PRAISONAI_HOME=str(home), OPENAI_BASE_URL=f"{llm.url}/v1", OPENAI_API_KEY=API_KEY)
    r = subprocess.run(
        [sys.executable, "-m", "praisonai", "managed", *args],
        capture_output=True, env=env, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    err = r.stderr.decode(errors="replace")
    assert r.returncode == 2, err
    assert fragment in err and "Traceback" not in err and len(err.strip().splitlines()) <= 4, err
    assert llm.requests == [], "a model request was made for refused input"
    with SqliteSessionStore() as store:
        assert store.list_sessions() == [] and store.list_agents() == []
