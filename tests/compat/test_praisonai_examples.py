"""PraisonAI's own managed-agent example files run here unchanged (vendored verbatim in
``praisonai_examples/``, each naming its source path and commit): ``python3 FILE`` in a child
process with this checkout on PYTHONPATH, a throwaway PRAISONAI_HOME and working directory, and the
standard variables pointing at the stand-ins (OPENAI_BASE_URL at a scripted model, ANTHROPIC_BASE_URL
at the Managed Agents fake, E2B's at its wire fake), as tests/test_examples.py runs ours.

What they exercise, as PraisonAI's users write it: ``from praisonai.integrations import LocalAgent,
LocalAgentConfig``; ``agent.start(prompt, stream=True)`` (the text echoed as it comes, and returned);
``managed.agent_id``/``agent_version``/``environment_id``/``session_id`` (hosted: the API's
ids), ``agent.chat_history``, ``save_ids()``/
``restore_ids()``, ``update_agent()``, ``compute_provider.provider_name``, custom tools through
``on_custom_tool``; ``retrieve_session()["usage"]["input_tokens"]`` and ``list_sessions()`` items
indexed as dicts; ``provision_compute``/``execute_in_compute``/``shutdown_compute`` on e2b.

Not vendored: ``provider/docker_compute.py`` and ``all_providers.py`` provision ``python:3.12-slim``
from Docker Hub and pip-install from PyPI (the network; the docker placement is covered by our
``examples/docker_compute.py``); the ``runtime_*`` files need other vendors' model APIs.

Nothing is left behind: PraisonAI's local loop runs tools as subprocesses of its own, ours on an
instance the session references (so another process can resume it; it stops when idle). So after a
run the example's sessions are deleted as a user deletes them (``delete_session``, what ``praisonai
managed sessions delete`` calls), and then no container, local instance, ledger row, process or
live e2b sandbox of its home may remain.
"""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from leftovers import child_env, remove_leftovers
from test_examples import Run, Services, example_model

from praisonai.llm.testing import API_KEY, Reply, ScriptedLLM, reply, tool

HERE = Path(__file__).resolve().parent / "praisonai_examples"
TIMEOUT_S = 150  # all five at once on 2 cores: generous, never asserted as a timing
#: What the calculator example asks for, and what PraisonAI's handler prints for it.
CALCULATION = ("99 * 77", "[Calculator: 99 * 77 = 7623]")
DELETE_SESSIONS = """
from praisonai.managed.sessions import delete_session, list_sessions
for record in list_sessions(limit=1000):
    report = delete_session(record.id)
    assert report.ok, report
"""


@dataclass(frozen=True)
class Example:
    services: tuple[str, ...]
    prints: tuple[str, ...]


#: the sandbox's answers, then the turn streamed (echoed, then returned), then the shutdown
E2B_PRINTS = ("Compute: e2b", "Exit code: 0", "Echo: Hello from E2B!", "Line 4", "Linux\n    Result: Linux",
              "Shutdown complete.")  # fmt: skip

EXAMPLES = {
    "local_basic.py": Example(("model",), ("[1] Basic execution...\nLinux\n    Result: Linux", "Done!")),
    "local_advanced.py": Example(("model",), (CALCULATION[1], "[2] Updated to v", "Done!")),
    "e2b_compute.py": Example(("model", "e2b"), E2B_PRINTS),
    "14_track_usage.py": Example(("hosted",), ("Status: idle", "Agent finished.")),
    "16_session_ids_explained.py": Example(("hosted",), ("chat_history  : 2 messages",)),
}


def test_every_vendored_example_is_run() -> None:
    assert sorted(p.name for p in HERE.glob("*.py")) == sorted(EXAMPLES)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_praisonai_example_runs_unchanged(name: str, runs: dict[str, Run]) -> None:
    runs[name].check(name, EXAMPLES[name].prints)


def test_local_basic_ids_usage_and_sessions(runs: dict[str, Run]) -> None:
    """The ids it prints are the session's; the usage is what the model served (two turns, each a
    tool call and an answer); list_sessions() indexed as dicts names that session, idle."""
    out = runs["local_basic.py"].out
    session = _field(out, r"Session: (\S+)")
    assert _field(out, r"\[2\] Agent ID: (\S+)").startswith("magt_")
    assert _field(out, r"Version: (\S+)") == "1"
    assert f"    {session} | idle" in out and "[5] Sessions: 1" in out
    assert _field(out, r"\[4\] Usage: (in=\d+, out=\d+)") == "in=40, out=20"


def test_local_advanced_resume_and_update(runs: dict[str, Run]) -> None:
    """restore_ids() continues the saved session; update_agent() gives the config a stored version."""
    out = runs["local_advanced.py"].out
    saved = _field(out, r"Saved IDs: .*'session_id': '(\w+)'")
    assert _field(out, r"Resumed session: (\S+)") == saved
    assert _field(out, r"\[1\] Created agent: (magt_\w+) \(v1\)")
    assert re.search(r"Usage: in=[1-9]\d*, out=[1-9]\d*", out)


def test_hosted_usage_matches_the_session_record(runs: dict[str, Run]) -> None:
    out = runs["14_track_usage.py"].out
    assert _field(out, r"Input tokens:  (\d+)") == _field(out, r"API Input tokens:  (\d+)") != "0"
    assert _field(out, r"Session ID: (\S+)").startswith("msess_")


def test_hosted_ids_are_the_apis_and_save_ids_says_them(runs: dict[str, Run]) -> None:
    """The hosted loop's agent and environment ids are the Managed Agents API's (not our store's),
    and save_ids() says the same ids the attributes do."""
    out = runs["16_session_ids_explained.py"].out
    agent_id, environment_id = _field(out, r"agent_id +: (\S+)"), _field(out, r"environment_id: (\S+)")
    assert agent_id.startswith("agent_") and environment_id.startswith("env_")
    saved = _field(out, r"save_ids\(\): (\{.*\})")
    session = _field(out, r"session_id +: (\S+)")
    assert f"'agent_id': '{agent_id}'" in saved and f"'environment_id': '{environment_id}'" in saved
    assert f"'session_id': '{session}'" in saved and "'agent_version': 1" in saved


def _field(out: str, pattern: str) -> str:
    found = re.search(pattern, out)
    assert found, f"no {pattern!r} in:\n{out}"
    return found.group(1)


# ---- running them ----------------------------------------------------------------------------


def praisonai_model(path: str, body: dict[str, Any]) -> Reply:
    """:func:`example_model`, plus: offered PraisonAI's custom ``calculator`` tool, it calls it."""
    messages = body.get("messages", [])
    tools = {t["function"]["name"] for t in body.get("tools", [])}
    if "calculator" in tools and messages and messages[-1]["role"] == "user":
        return reply(tool("calculator", expression=CALCULATION[0]))
    return example_model(path, body)


@pytest.fixture(scope="module")
def runs(
    docker_ok: None, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Run]]:
    """Every vendored example run once, concurrently, against the services it needs."""
    with contextlib.ExitStack() as stack:
        services = Services(stack, request, tmp_path_factory.mktemp("services"))
        llm = stack.enter_context(ScriptedLLM(praisonai_model))
        model = {"OPENAI_BASE_URL": llm.openai_kwargs()["base_url"], "OPENAI_API_KEY": API_KEY}
        envs = {
            name: {
                **services.env(tuple(s for s in ex.services if s != "model")),
                **(model if "model" in ex.services else {}),
            }
            for name, ex in EXAMPLES.items()
        }
        with ThreadPoolExecutor(len(EXAMPLES)) as pool:
            futures = {
                name: pool.submit(_run, name, envs[name], tmp_path_factory.mktemp(name.removesuffix(".py")))
                for name in EXAMPLES
            }
            results = {name: f.result() for name, f in futures.items()}
        if live := services.live_instances("e2b"):
            results["e2b_compute.py"].left["e2b instances"] = live
        yield results


def _run(name: str, env: dict[str, str], place: Path) -> Run:
    """Run the vendored ``name`` in ``place``, delete the sessions it made, and record (and
    remove) whatever its home still holds."""
    home, work = place / "home", place / "work"
    work.mkdir()
    env = {**child_env(home), **env}
    run = Run()
    try:
        done = subprocess.run(
            [sys.executable, str(HERE / name)], cwd=work, env=env, stdin=subprocess.DEVNULL,
            capture_output=True, text=True, timeout=TIMEOUT_S, check=False,
        )  # fmt: skip
        run.out, run.err, run.status = done.stdout, done.stderr, done.returncode
        deleted = subprocess.run(
            [sys.executable, "-c", DELETE_SESSIONS], cwd=work, env=env, capture_output=True, text=True,
            timeout=TIMEOUT_S, check=False,
        )  # fmt: skip
        if deleted.returncode != 0:
            run.left["sessions (delete failed)"] = [deleted.stderr[-2000:]]
    except subprocess.TimeoutExpired as exc:
        run.err = f"ran past {TIMEOUT_S} s\n{exc.stderr!r}"
    finally:
        run.left.update(remove_leftovers(home, set()))
    return run
