"""``praisonai managed run --workspace/--repo`` and ``managed diff`` as a user runs them: the
real command in a child process, a real local instance, the model a scripted server. The edit
the agent made shows in the diff; a repo's token is found nowhere under PRAISONAI_HOME; bad
input is one line before any model request."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from githttp import GitHTTP, make_bare

from praisonai.llm.testing import API_KEY, ScriptedLLM, reply, tool

TOKEN = "tok-5d0c2b7e41aa93f8"
Cli = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        yield server


@pytest.fixture
def cli(home: Path, llm: ScriptedLLM) -> Iterator[Cli]:
    """``praisonai managed ARGS…`` in a child process; the instances it made are stopped after."""
    base = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "CLAUDE_API_KEY")}
    env = {**base, "PRAISONAI_HOME": str(home), "OPENAI_BASE_URL": f"{llm.url}/v1",
           "OPENAI_API_KEY": API_KEY, "REPO_TOKEN": TOKEN}  # fmt: skip

    def run(*args: str) -> Any:
        return subprocess.run([sys.executable, "-m", "praisonai", *args], capture_output=True, text=True,
                              timeout=180, env=env, stdin=subprocess.DEVNULL)  # fmt: skip

    yield run
    from praisonai._ledger import Ledger

    made = [e.instance_id for e in Ledger.default().entries()]
    if made:
        assert run("compute", "stop", *made).returncode == 0


def session_of(r: subprocess.CompletedProcess[str]) -> str:
    first = r.stderr.splitlines()[0] if r.stderr else ""
    assert first.startswith("session: msess_"), (r.returncode, r.stdout, r.stderr)
    return first.removeprefix("session: ")


def test_the_agents_edit_shows_in_managed_diff(cli: Cli, llm: ScriptedLLM, tmp_path: Path) -> None:
    tree = tmp_path / "project"
    tree.mkdir()
    (tree / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (tree / ".gitignore").write_text("*.pyc\n")
    (tree / "stale.pyc").write_text("ignored")
    llm.set_script([
        reply(tool("edit_file", path="calc.py", old_string="a - b", new_string="a + b")),
        reply("Fixed the sign."),
    ])  # fmt: skip
    r = cli("managed", "run", "fix add", "--compute", "local", "--workspace", str(tree))
    assert r.returncode == 0, r.stderr
    sid = session_of(r)
    patch = cli("managed", "diff", sid)
    assert patch.returncode == 0, patch.stderr
    assert patch.stdout.startswith("diff --git a/calc.py b/calc.py\n")
    assert "-    return a - b\n+    return a + b\n" in patch.stdout and "stale.pyc" not in patch.stdout
    assert (tree / "calc.py").read_text().endswith("a - b\n")  # the user's tree is untouched
    subprocess.run(["git", "apply", "-"], input=patch.stdout, text=True, cwd=tree, check=True)
    assert (tree / "calc.py").read_text().endswith("a + b\n")


def test_a_repo_token_is_nowhere_in_the_home(cli: Cli, llm: ScriptedLLM, home: Path, tmp_path: Path) -> None:
    make_bare(tmp_path)
    with GitHTTP(tmp_path, TOKEN) as served:
        llm.set_script([reply(tool("execute_command", command="git log --format=%s -1")), reply("done")])
        r = cli("managed", "run", "what is the last commit", "--compute", "local",
                "--repo", f"{served.url}@feature", "--repo-token-env", "REPO_TOKEN")  # fmt: skip
        assert r.returncode == 0, r.stderr
        assert served.authorized > 0 and "third" in r.stdout
    assert TOKEN not in r.stdout + r.stderr
    found = [
        p for p in home.rglob("*") if p.is_file() and not p.is_symlink() and TOKEN.encode() in p.read_bytes()
    ]
    assert found == []  # the store, the ledger, the instance's workspace and its .git/config
    shown = cli("managed", "sessions", "show", session_of(r), "--json", "--events")
    assert shown.returncode == 0 and TOKEN not in shown.stdout


def test_an_unknown_ref_is_one_line_before_any_model_request(
    cli: Cli, llm: ScriptedLLM, home: Path, tmp_path: Path
) -> None:
    bare = make_bare(tmp_path)
    r = cli("managed", "run", "hi", "--compute", "local", "--repo", f"{bare}@no-such-ref")
    said = f"error: the repository {bare} has no branch, tag or commit 'no-such-ref'; give one that exists after @"  # noqa: E501
    assert (r.returncode, r.stdout, r.stderr.strip().splitlines()[-1]) == (2, "", said)
    assert llm.requests == [] and not list((home / "local").glob("*/workspace"))  # removed, not left


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--workspace", "/no/such/tree"], "error: the workspace /no/such/tree does not exist; "
                                           "give an existing directory"),
        (["--repo", "https://h/o/r", "--repo-token-env", "UNSET_VAR_X"],
         "error: the repository token variable UNSET_VAR_X is not set; export it or drop the token"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_before_any_model_request(
    cli: Cli, llm: ScriptedLLM, flags: list[str], said: str
) -> None:
    r = cli("managed", "run", "hi", "--compute", "local", *flags)
    assert (r.returncode, r.stdout, r.stderr.strip()) == (2, "", said)
    assert llm.requests == []
