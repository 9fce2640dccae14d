"""The default compute on a machine without docker: isolated, or refused, never silently the host.

Each case runs the real CLI or library in a child process whose docker engine is a dead socket
(``DOCKER_HOST``) and, for "no bubblewrap", whose ``PATH`` holds no ``bwrap`` (bubblewrap is found on
the process's ``PATH``). The proof of isolation is a file in a directory under the user's home,
outside any workspace: an isolated command cannot read it, a host command can.

Where a model chooses the commands, the refusal comes before any model call: the scripted model
(in this process, reached over loopback) must have received no request at all.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import praisonai
from praisonai.compute.registry import NO_ISOLATION
from praisonai.llm.testing import API_KEY, ScriptedLLM, reply

_REPO = Path(praisonai.__file__).parents[1]
_NO_DOCKER = "unix:///nonexistent/docker.sock"
UNISOLATED_LINE = "compute: local (on this host, NOT isolated: install docker or bubblewrap to isolate)"

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")


@pytest.fixture
def host_secret() -> Iterator[Path]:
    """A file under the user's home, outside every workspace, removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="praisonai-i26-", dir=Path.home()))
    try:
        secret = folder / "secret.txt"
        secret.write_text(f"host-secret-{secrets.token_hex(8)}\n")
        yield secret
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def no_bwrap_path(tmp_path: Path) -> str:
    """A ``PATH`` with ``sh`` but no ``bwrap``."""
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "sh").symlink_to("/bin/sh")
    return str(folder)


def child_env(home: Path, *, path: str | None = None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "CLAUDE_API_KEY")}
    env.update(DOCKER_HOST=_NO_DOCKER, PRAISONAI_HOME=str(home), PYTHONPATH=str(_REPO), **extra)
    if path is not None:
        env["PATH"] = path
    return env


def run(env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip


def ledger_rows(home: Path) -> list[str]:
    """The instances the home's ledger still records (none may outlive a test)."""
    if not (home / "ledger.db").exists():
        return []
    from praisonai._ledger import Ledger

    return [e.instance_id for e in Ledger(home / "ledger.db").entries()]


# ---- docker absent, bubblewrap present: the default isolates ------------------------------------


def test_sandbox_run_default_without_docker_runs_under_bubblewrap(
    home: Path, tmp_path: Path, host_secret: Path
) -> None:
    r = run(child_env(home), "-m", "praisonai", "sandbox", "run", "--", "cat", str(host_secret), cwd=tmp_path)
    assert "compute: local (bubblewrap)" in r.stderr.splitlines(), r.stderr
    assert r.returncode != 0 and host_secret.read_text() not in r.stdout  # the home is not there
    assert ledger_rows(home) == []


def test_sandbox_create_default_without_docker_is_isolated(
    home: Path, tmp_path: Path, host_secret: Path
) -> None:
    script = f"""
        import json
        from praisonai import Sandbox
        with Sandbox.create() as sb:
            r = sb.exec(["cat", {str(host_secret)!r}])
            print(json.dumps([sb.provider.provider_name, sb.provider.flavour, r.exit_code, r.stdout]))
    """
    r = run(child_env(home), "-c", textwrap.dedent(script), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    name, flavour, code, out = json.loads(r.stdout)
    assert (name, flavour) == ("local", "bubblewrap")
    assert code != 0 and host_secret.read_text() not in out
    assert ledger_rows(home) == []


# ---- neither docker nor bubblewrap: a typed command says so, the library refuses -----------------


def refusal_script(body: str, *, imports: str, prelude: str = "") -> str:
    """A Python script that runs ``body`` and prints the ProviderUnavailableError's sentence if it
    is refused, else ``ran``."""
    statements = textwrap.indent(textwrap.dedent(body).strip(), "    ")
    handler = ["except ProviderUnavailableError as exc:", "    print(exc)", "else:", '    print("ran")']
    head = [f"from praisonai import ProviderUnavailableError, {imports}", prelude, "try:"]
    return "\n".join([*head, statements, *handler])


def test_sandbox_run_default_without_isolation_says_it_runs_on_the_host(
    home: Path, tmp_path: Path, no_bwrap_path: str
) -> None:
    env = child_env(home, path=no_bwrap_path)
    r = run(env, "-m", "praisonai", "sandbox", "run", "--", "sh", "-c", "echo ran", cwd=tmp_path)
    assert (r.returncode, r.stdout) == (0, "ran\n"), r.stderr
    assert UNISOLATED_LINE in r.stderr.splitlines(), r.stderr


def test_sandbox_create_default_without_isolation_is_refused(
    home: Path, tmp_path: Path, no_bwrap_path: str
) -> None:
    script = refusal_script("Sandbox.create()", imports="Sandbox")
    r = run(child_env(home, path=no_bwrap_path), "-c", script, cwd=tmp_path)
    assert (r.returncode, r.stdout) == (0, f"{NO_ISOLATION}\n"), r.stderr
    assert ledger_rows(home) == [] and not (home / "local").exists()


#: Where a model chooses the commands, with no compute named: each must refuse before the model
#: is asked anything. ``KW`` are the model's keywords (the scripted server's URL and key).
MODEL_PATHS = {
    "SharedCompute attached to an Agent": """
        with SharedCompute() as shared:
            agent = Agent("a", **KW)
            shared.attach([agent])
            agent.start("list the files")
    """,
    "SharedCompute's tools": """
        SharedCompute().build_tools()
    """,
    "ManagedAgent": """
        ManagedAgent(config=LocalManagedConfig(model="gpt-4o-mini"), **KW).run("list the files")
    """,
    "Agent with a ManagedAgent backend": """
        Agent("a", backend=ManagedAgent(config={"model": "gpt-4o-mini"}, **KW)).start("list the files")
    """,
    "AgentTeam of managed agents": """
        managed = ManagedAgent(config={"model": "gpt-4o-mini"}, **KW)
        AgentTeam(agents=[Agent("a", backend=managed)]).start("go")
    """,
    "AgentFlow of managed agents": """
        managed = ManagedAgent(config={"model": "gpt-4o-mini"}, **KW)
        AgentFlow(steps=[Agent("a", backend=managed)]).start("go")
    """,
}


@pytest.mark.parametrize("case", MODEL_PATHS)
def test_model_driven_default_without_isolation_is_refused_before_any_model_call(
    case: str, home: Path, tmp_path: Path, no_bwrap_path: str
) -> None:
    with ScriptedLLM([reply("never asked")]) as llm:
        script = refusal_script(
            MODEL_PATHS[case],
            imports="Agent, AgentFlow, AgentTeam, LocalManagedConfig, ManagedAgent, SharedCompute",
            prelude=f"KW = {{'base_url': {llm.url + '/v1'!r}, 'api_key': {API_KEY!r}}}",
        )
        r = run(child_env(home, path=no_bwrap_path), "-c", script, cwd=tmp_path)
        assert (r.returncode, r.stdout) == (0, f"{NO_ISOLATION}\n"), r.stderr
        assert llm.requests == []
    assert ledger_rows(home) == [] and not (home / "local").exists()


def test_managed_run_default_without_isolation_is_refused_before_any_model_call(
    home: Path, tmp_path: Path, no_bwrap_path: str
) -> None:
    with ScriptedLLM([reply("never asked")]) as llm:
        env = child_env(home, path=no_bwrap_path, OPENAI_BASE_URL=f"{llm.url}/v1", OPENAI_API_KEY=API_KEY)
        r = run(env, "-m", "praisonai", "managed", "run", "list the files", cwd=tmp_path)
        assert r.returncode != 0 and NO_ISOLATION in r.stderr, r.stderr
        assert "Traceback" not in r.stderr and llm.requests == []
        listed = run(env, "-m", "praisonai", "managed", "sessions", "list", "--json", cwd=tmp_path)
    assert listed.returncode == 0 and "msess_" not in listed.stdout  # no session was left behind
    assert ledger_rows(home) == []


# ---- "local" by name stays host execution ---------------------------------------------------------


def test_local_by_name_runs_on_the_host_without_a_note(
    home: Path, tmp_path: Path, host_secret: Path, no_bwrap_path: str
) -> None:
    env = child_env(home, path=no_bwrap_path)
    r = run(
        env, "-m", "praisonai", "sandbox", "run", "-c", "local", "--", "cat", str(host_secret), cwd=tmp_path
    )
    assert (r.returncode, r.stdout) == (0, host_secret.read_text()), r.stderr
    assert "compute:" not in r.stderr
    script = f"""
        from praisonai import Sandbox
        with Sandbox.create("local") as sb:
            print(sb.exec(["cat", {str(host_secret)!r}]).stdout, end="")
    """
    r = run(env, "-c", textwrap.dedent(script), cwd=tmp_path)
    assert (r.returncode, r.stdout) == (0, host_secret.read_text()), r.stderr


# ---- what ps, providers and env plan call the bubblewrap flavour ---------------------------------


def test_ps_providers_and_env_plan_name_the_bubblewrap_flavour(
    home: Path, tmp_path: Path, no_bwrap_path: str
) -> None:
    made = """
        import anyio
        from praisonai.compute.registry import resolve_compute
        print(anyio.run(resolve_compute({"type": "local", "isolate": True}).provision).instance_id)
    """
    env = child_env(home)
    r = run(env, "-c", textwrap.dedent(made), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    instance_id = r.stdout.strip()
    try:
        rows = json.loads(run(env, "-m", "praisonai", "compute", "ps", "--json", cwd=tmp_path).stdout)
        row = next(row for row in rows if row["instance"] == instance_id)
        assert (row["provider"], row["flavour"]) == ("local", "bubblewrap")
        wide = {**env, "COLUMNS": "250"}  # one line per row
        table = run(wide, "-m", "praisonai", "compute", "ps", cwd=tmp_path).stdout
        assert f"{instance_id}  local (bubblewrap)" in table
    finally:
        stopped = run(env, "-m", "praisonai", "compute", "stop", instance_id, cwd=tmp_path)
        assert stopped.returncode == 0, stopped.stderr

    def providers(env: dict[str, str]) -> dict[str, dict[str, object]]:
        r = run(env, "-m", "praisonai", "compute", "providers", "--json", cwd=tmp_path)
        return {row["name"]: row for row in json.loads(r.stdout)}

    isolated, plain = providers(env)["local (bubblewrap)"], providers(env)["local"]
    assert isolated["available"] and "isolation" in str(isolated["capabilities"])
    assert "isolation" not in str(plain["capabilities"])
    missing = providers(child_env(home, path=no_bwrap_path))["local (bubblewrap)"]
    assert not missing["available"] and "bubblewrap" in str(missing["why_not"])

    (tmp_path / ".git").mkdir()
    (tmp_path / ".praisonai").mkdir()
    (tmp_path / ".praisonai" / "environment.yaml").write_text("network: none\n")
    r = run(env, "-m", "praisonai", "env", "plan", "--json", cwd=tmp_path)
    plans = {
        p["name"]: {f["field"]: f["support"] for f in p["fields"]} for p in json.loads(r.stdout)["providers"]
    }
    assert plans["local (bubblewrap)"]["network"] == "native" and plans["local"]["network"] == "unsupported"


def test_a_bubblewrap_that_cannot_sandbox_here_is_not_taken_for_isolation(
    home: Path, tmp_path: Path, no_bwrap_path: str
) -> None:
    """Installed is not enough: a ``bwrap`` that cannot make namespaces (a container that forbids
    them) leaves the default with no isolation, as a missing one does."""
    broken = Path(no_bwrap_path) / "bwrap"
    broken.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    broken.chmod(0o755)
    env = child_env(home, path=no_bwrap_path)
    r = run(env, "-m", "praisonai", "sandbox", "run", "--", "sh", "-c", "echo ran", cwd=tmp_path)
    assert (r.returncode, r.stdout) == (0, "ran\n") and UNISOLATED_LINE in r.stderr.splitlines(), r.stderr
    r = run(env, "-m", "praisonai", "compute", "providers", "--json", cwd=tmp_path)
    row = next(row for row in json.loads(r.stdout) if row["name"] == "local (bubblewrap)")
    assert not row["available"] and "No permissions to create new namespace" in row["why_not"]
