"""The examples/ run as a user runs them: ``python3 examples/NAME.py``, in a child process with this
checkout on PYTHONPATH and a throwaway PRAISONAI_HOME and working directory. Nothing in an example
knows it is tested: the standard variables point its SDKs at stand-ins on 127.0.0.1 —
OPENAI_BASE_URL/OPENAI_API_KEY at a scripted model (:func:`example_model`), ANTHROPIC_BASE_URL/
ANTHROPIC_API_KEY at the Managed Agents fake, each cloud SDK's own variables at its vendor's wire
fake (whose sandboxes are docker containers), KUBECONFIG at the API-server fake, PRAISONAI_SSH_*
at the test sshd. With real keys in those variables the same files run live.

The examples are independent, so they run all at once on a thread pool, once per module; each test
then checks one run: exit 0, the lines :data:`EXAMPLES` says it prints (the command's answer, the
file the agent wrote read back from the instance), and nothing left behind: no container, local
instance, ledger row or process of its home, no SSH workspace, no live sandbox on its vendor's fake.
"""

from __future__ import annotations

import contextlib
import gc
import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fakes.managed_agents import API_KEY as MANAGED_API_KEY
from fakes.managed_agents import ManagedAgentsFake, end_turn, say, usage
from leftovers import ROOT, child_env, remove_leftovers, ssh_instances
from served import CLOUDS  # the registered providers the tests serve through a wire fake

from praisonai.compute.testing.sshd import SSHServer
from praisonai.llm.testing import API_KEY, Reply, ScriptedLLM, reply, tool

EXAMPLE_TIMEOUT_S = 150  # all of them at once on 2 cores: generous, never asserted as a timing
WORKERS = 4
#: What the scripted model writes when a prompt asks it to write a file: the examples read it back.
GREETING = "Hello from the scripted model!"
#: What a placement example prints: the command's answer, the agent's file read from the instance.
PLACED = (
    "[2] Command: 546 from Linux (exit 0)",
    f"hello.txt in the {{}}: {GREETING!r}",
    "removed.",
)
#: The image the fakes that run a config's image (modal, kubernetes) are given: they pull nothing.
SANDBOX_IMAGE = "praisonai-sandbox:latest"
#: What the hosted agent says in each session (the Managed Agents fake's script).
HOSTED_SAYS = "Done: fib(20) is 6765."
FLY_APP = "praisonai-examples"


@dataclass(frozen=True)
class Example:
    """An example's services (``model``, ``hosted``, ``docker``, ``ssh`` or a cloud provider's
    name) and the fragments its stdout must hold."""

    services: tuple[str, ...]
    prints: tuple[str, ...]


def _placed(service: str, where: str) -> Example:
    return Example(("model", service), tuple(p.format(where) for p in PLACED))


EXAMPLES: dict[str, Example] = {
    "local_compute.py": _placed("local", "workspace"),
    "docker_compute.py": _placed("docker", "container"),
    "ssh_compute.py": _placed("ssh", "workspace"),
    "e2b_compute.py": _placed("e2b", "sandbox"),
    "modal_compute.py": _placed("modal", "sandbox"),
    "daytona_compute.py": _placed("daytona", "sandbox"),
    "flyio_compute.py": _placed("flyio", "machine"),
    "tenki_compute.py": _placed("tenki", "sandbox"),
    "kubernetes_compute.py": _placed("kubernetes", "pod"),
    "team_shared_instance.py": Example(("model", "docker"), (GREETING,)),
    "flow_shared_instance.py": Example(("model", "docker"), ("Linux",)),
    "flow_tools_run_on.py": Example(("model", "docker"), (GREETING,)),
    "managed_local_loop.py": Example(
        ("model", "docker"),
        ("tool: execute_command", "Stop reason: end_turn", f"[4] Resumed: {GREETING}", "rows ok"),
    ),
    "hosted_anthropic.py": Example(
        ("hosted",), (f"[1] Agent: {HOSTED_SAYS}", "Stop reason: end_turn", "remote ok")
    ),
    "resume_from_cli.py": Example(
        ("model", "docker"),
        ("sessions resume msess_", "read_file(path='notes.txt')  [ok", "rows: removed the session"),
    ),
    "environment_yaml.py": Example(
        ("model", "docker"), ("ok: ", "[2] MODE=ci in /workspace / made by setup", "'report.txt'")
    ),
    # the first start may find a capture made before (any home's): the second always does
    "captures.py": Example(("docker",), ("[first] docker_", "[second] docker_", ": setup, refresh; MODE=ci")),
}


@dataclass
class Run:
    """What one example's run printed, how it ended and what it left behind."""

    out: str = ""
    err: str = ""
    status: int | None = None
    left: dict[str, list[str]] = field(default_factory=dict)

    def check(self, where: str, prints: tuple[str, ...]) -> None:
        """It exited 0, printed each of ``prints`` and left nothing behind (its output is shown
        when it did not)."""
        print(self.out, self.err, sep="\n--- stderr ---\n")
        assert self.status == 0, f"{where} exited {self.status}:\n{self.err[-3000:]}"
        for fragment in prints:
            assert fragment in self.out, f"{where} should print {fragment!r}"
        assert not self.left, f"{where} left things behind: {self.left}"


def test_every_example_is_run_here() -> None:
    """A new example without an entry in EXAMPLES would go untested."""
    assert sorted(p.name for p in (ROOT / "examples").glob("*.py")) == sorted(EXAMPLES)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_runs(name: str, runs: dict[str, Run]) -> None:
    runs[name].check(f"examples/{name}", EXAMPLES[name].prints)


# ---- the scripted model ---------------------------------------------------------------------


def example_model(path: str, body: dict[str, Any]) -> Reply:
    """A stand-in model that uses the tools it is given, so the examples' tools run for real: an
    agent whose instructions begin "You read" or "You review" (or whose latest prompt says to read
    or review, and not to write) reads the file that prompt names; a prompt that says to write gets
    :data:`GREETING` written into the file it names; else it runs ``uname -s``. Then it answers
    with the tool's result."""
    messages = body.get("messages", [])
    if messages and messages[-1]["role"] == "tool":
        return reply(str(messages[-1]["content"]))
    tools = {t["function"]["name"] for t in body.get("tools", [])}
    system = next((str(m["content"]) for m in messages if m["role"] == "system"), "")
    prompt = next((str(m["content"]) for m in reversed(messages) if m["role"] == "user"), "")
    named = re.search(r"(?:/|\b)[\w/]+\.(?:py|txt|md)\b", prompt)
    writes = re.search(r"\bwrite\b", prompt, re.IGNORECASE)
    asked_to_read = re.search(r"\b(read|review)\b", prompt, re.IGNORECASE) and not writes
    reads = re.match(r"You (read|review)\b", system) or asked_to_read
    if named and reads and "read_file" in tools:
        return reply(tool("read_file", path=named.group(0)))
    if named and writes and "write_file" in tools:
        return reply(tool("write_file", path=named.group(0), content=GREETING + "\n"))
    if "execute_command" in tools:
        return reply(tool("execute_command", command="uname -s"))
    return reply("LGTM")


# ---- running them all -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def runs(
    docker_ok: None, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Run]]:
    """Every example run once, concurrently, against the services it needs (started once)."""
    with contextlib.ExitStack() as stack:
        services = Services(stack, request, tmp_path_factory.mktemp("services"))
        envs = {name: services.env(ex.services) for name, ex in EXAMPLES.items()}
        ssh_before = ssh_instances(services.sshd)
        with ThreadPoolExecutor(WORKERS) as pool:
            futures = {
                name: pool.submit(_run, name, envs[name], tmp_path_factory.mktemp(name.removesuffix(".py")))
                for name in EXAMPLES
            }
            results = {name: f.result() for name, f in futures.items()}
        ssh_left = ssh_instances(services.sshd) - ssh_before
        if ssh_left:
            results["ssh_compute.py"].left["ssh instances"] = sorted(ssh_left)
        for name, example in EXAMPLES.items():
            for cloud in set(example.services) & set(CLOUDS):
                if live := services.live_instances(cloud):
                    results[name].left[f"{cloud} instances"] = live
        # The cloud SDKs' handles those listings made, collected now while they are ours: one
        # finalized inside a later ast.parse trips CPython 3.11.7 (see collect_sdk_garbage).
        gc.collect()
        yield results
    gc.collect()


def _run(name: str, env: dict[str, str], place: Path) -> Run:
    """Run ``examples/NAME`` in ``place`` (its home and working directory there); what it left in
    its home is recorded and removed."""
    home, work = place / "home", place / "work"
    work.mkdir()
    env = {**child_env(home), **env}
    run = Run()
    env.update(PYTHONUNBUFFERED="1", PYTHONFAULTHANDLER="1")  # on a hang: what it printed, and where
    child = subprocess.Popen(
        [sys.executable, str(ROOT / "examples" / name)], cwd=work, env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        run.out, run.err = child.communicate(timeout=EXAMPLE_TIMEOUT_S)
        run.status = child.returncode
    except subprocess.TimeoutExpired:
        child.send_signal(signal.SIGABRT)  # faulthandler prints every thread's stack
        try:
            out, err = child.communicate(timeout=5)
        except subprocess.TimeoutExpired:  # its children hold the pipes: the group goes, as below
            os.killpg(child.pid, signal.SIGKILL)
            out, err = child.communicate()
        run.out, run.err = out, f"ran past {EXAMPLE_TIMEOUT_S} s\n{err}"
    finally:
        with contextlib.suppress(ProcessLookupError):  # nothing of its process group outlives it
            os.killpg(child.pid, signal.SIGKILL)
        run.left = remove_leftovers(home, set())
    return run


class Services:
    """The stand-ins, each started on first use and stopped with the module, and the variables
    that point an example's SDKs at them."""

    def __init__(self, stack: contextlib.ExitStack, request: pytest.FixtureRequest, scratch: Path) -> None:
        self._stack, self._request, self._scratch = stack, request, scratch
        self._env: dict[str, dict[str, str]] = {}
        self.sshd: SSHServer | None = None

    def env(self, services: tuple[str, ...]) -> dict[str, str]:
        merged: dict[str, str] = {}
        for service in services:
            if service not in self._env:
                self._env[service] = STARTERS[service](self)
            merged.update(self._env[service])
        return merged

    def enter(self, context: Any) -> Any:
        return self._stack.enter_context(context)

    def live_instances(self, cloud: str) -> list[str]:
        """The instances its fake still runs, as our provider lists them through the same
        variables, in a child process as a user would: in this one an SDK's process-wide client
        (Modal's) may still point at the fake of an earlier test module, long stopped."""
        env = {**os.environ, **self._env[cloud], "PYTHONPATH": str(ROOT)}
        child = subprocess.run(
            [sys.executable, "-c", LIST_LIVE.format(cloud=cloud)], env=env, capture_output=True, text=True
        )
        assert child.returncode == 0, f"listing {cloud} failed: {child.stderr[-2000:]}"
        return child.stdout.split()


#: Prints the ids of the instances a provider lists as not stopped.
LIST_LIVE = """
from praisonai import _portal
from praisonai.compute.registry import resolve_compute
listed = _portal.call(resolve_compute({cloud!r}).list_instances)
print(*[i.instance_id for i in listed if i.status.value != "stopped"])
"""


def _model(s: Services) -> dict[str, str]:
    llm = s.enter(ScriptedLLM(example_model))
    return {"OPENAI_BASE_URL": llm.openai_kwargs()["base_url"], "OPENAI_API_KEY": API_KEY}


def _hosted(s: Services) -> dict[str, str]:
    fake = s.enter(ManagedAgentsFake([say(HOSTED_SAYS), usage(), end_turn()]))
    return {"ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": MANAGED_API_KEY}


def _ssh(s: Services) -> dict[str, str]:
    server: SSHServer = s._request.getfixturevalue("sshd")
    s.sshd = server
    return {
        "PRAISONAI_SSH_HOSTS": f"{server.user}@{server.host}:{server.port}",
        "PRAISONAI_SSH_KEY": str(server.key_file),
        "PRAISONAI_SSH_KNOWN_HOSTS": str(server.known_hosts),
    }


def _e2b(s: Services) -> dict[str, str]:
    from fakes.e2b import E2BFake

    env: dict[str, str] = s.enter(E2BFake()).env()
    return env


def _modal(s: Services) -> dict[str, str]:
    from fakes.modal import ModalFake

    fake = ModalFake().start()
    s._stack.callback(fake.stop)
    return {**fake.env(), "PRAISONAI_MODAL_IMAGE": SANDBOX_IMAGE}  # the fake pulls nothing


def _daytona(s: Services) -> dict[str, str]:
    from fakes.daytona import DaytonaFake

    fake = s.enter(DaytonaFake())
    return {"DAYTONA_API_KEY": "fake-key", "DAYTONA_API_URL": fake.api_url}


def _flyio(s: Services) -> dict[str, str]:
    from fakes.flyio import FlyioFake

    fake = s.enter(FlyioFake())
    fake.create_app("praisonai-examples")  # as `fly apps create` would have
    return {
        "FLY_API_TOKEN": "fake-token",
        "FLY_APP_NAME": "praisonai-examples",
        "FLY_API_HOSTNAME": fake.api_url,
    }


def _tenki(s: Services) -> dict[str, str]:
    from fakes.tenki import TenkiFake

    fake = s.enter(TenkiFake())
    return {"TENKI_API_KEY": "tk_fake", "TENKI_API_ENDPOINT": fake.base_url}


def _kubernetes(s: Services) -> dict[str, str]:
    from fakes.kubernetes import KubernetesFake

    kubeconfig = s.enter(KubernetesFake()).write_kubeconfig(s._scratch / "kubeconfig", namespace="examples")
    return {"KUBECONFIG": str(kubeconfig), "PRAISONAI_KUBERNETES_IMAGE": SANDBOX_IMAGE}  # pulls nothing


STARTERS: dict[str, Callable[[Services], dict[str, str]]] = {
    "model": _model,
    "hosted": _hosted,
    "local": lambda s: {},
    "docker": lambda s: {},
    "ssh": _ssh,
    "e2b": _e2b,
    "modal": _modal,
    "daytona": _daytona,
    "flyio": _flyio,
    "tenki": _tenki,
    "kubernetes": _kubernetes,
}
