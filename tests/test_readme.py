"""The snippets of the README (the tutorial) and of docs/ (the reference site) run as written:
every ```python fence, and every `praisonai …` command of the ```bash fences, in a child process
with this checkout on PYTHONPATH, a throwaway PRAISONAI_HOME and a throwaway working directory.

Where a snippet runs:

- on the providers it names (a ``"docker"`` or ``"local"`` string in the code, ``--compute NAME``
  on a command line); one that names none uses the default, and runs once per provider, the default
  picked by a ``backend:`` line in the working directory's ``.praisonai/environment.yaml``;
- ``SSHCompute`` snippets run against the test sshd: only the host, port, user and key paths are
  substituted (:data:`SSH_SUBSTITUTIONS`), nothing else;
- agent snippets talk to :class:`ScriptedLLM` through ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY``,
  which the openai SDK reads when no ``base_url=``/``api_key=`` is given; their tools run for real.

An HTML comment ``<!-- readme-test: skip (why) -->`` on the line before a fence skips it with that
reason; keep it for snippets that cannot run here at all. Each run must exit 0 within
:data:`SNIPPET_TIMEOUT_S`, print what :data:`EXPECTED` says, and leave nothing behind: no
container of its home, no local instance directory, no process working in its home, no SSH
instance. Timing is not asserted. The examples/ the README points to run in tests/test_examples.py.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import re
import shlex
import signal
import subprocess
import sys
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from fakes.managed_agents import API_KEY as MANAGED_API_KEY
from fakes.managed_agents import ManagedAgentsFake, end_turn, say, usage
from leftovers import ROOT, child_env, remove_leftovers, ssh_instances

from praisonai import _portal
from praisonai.compute.testing.sshd import SSHServer
from praisonai.llm.testing import API_KEY, Reply, ScriptedLLM, reply, tool

#: The pages whose snippets run: the README, then each page of the docs site.
PAGES = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
SNIPPET_TIMEOUT_S = 40
PROVIDERS = ("local", "docker")
#: Cloud providers a snippet may name: it runs against the vendor's wire fake (real SDK, docker
#: containers behind it), pointed at by the SDK's own variables in the child's environment.
CLOUD = ("e2b", "modal", "daytona")
#: A snippet that names the hosted backend (``provider="anthropic"``) runs against the Managed
#: Agents fake, pointed at by the anthropic SDK's own variables (no Anthropic account is used).
HOSTED = "anthropic"

#: What a snippet prints, by a fragment of code that picks out exactly one snippet.
EXPECTED: dict[str, tuple[str, ...]] = {
    "check.py": ("test 1\n",),
    'AsyncSandbox.create("local")': (".\n..\n",),
    "python3 -i -q": ("ci\nhi\n", "42\n", "\n3\n", "\n130\n"),
    '"echo hi"': ("hi\n",),
    "uname -sm": ("Linux", "token set"),
    'WarmPool("docker", definition': ("ci\n",),
    "shared=True": ("ci\n",),
    "def add": ("5 Usage(",),
    "SharedCompute": ("notes/report.md",),
    'managed.stream("now add a test")': ("end_turn Usage(",),
    "hosted.run(": ("end_turn Usage(",),
    'idle_action="pause"': ("paused\nkept\n",),
    "sb.upload_workspace(project)": ("+print('fixed')\n", "Change(path='NOTES', status='added')"),
    "sb.expose(8000)": ("<h1>built by an agent</h1>",),
}

#: The SSH snippet's example host, replaced by the test sshd's (each must be found once).
SSH_SUBSTITUTIONS = {
    'host="build1.internal"': 'host="{host}", port={port}',
    'user="ci"': 'user="{user}"',
    'key_file="~/.ssh/ci_ed25519",\n': 'key_file="{key_file}",\n',
    'known_hosts="~/.ssh/known_hosts"': 'known_hosts="{known_hosts}"',
}


@dataclass(frozen=True)
class Snippet:
    lang: str  # "python", or "bash" for one praisonai command line of a bash fence
    line: int  # where it starts in its file
    code: str
    skip: str | None  # the reason given by a readme-test: skip comment
    expect: tuple[str, ...] = ()  # stdout fragments
    file: str = "README"

    @property
    def where(self) -> str:
        return f"{self.file} line {self.line}"

    @property
    def providers(self) -> tuple[str, ...]:
        """Where it runs: the providers it names, else (it uses the default) each of them."""
        return self.named_providers or PROVIDERS

    @property
    def named_providers(self) -> tuple[str, ...]:
        if self.lang == "bash":
            argv = shlex.split(self.code)
            options = argv[: argv.index("--")] if "--" in argv else argv  # not the command's own
            named = [options[i + 1] for i, a in enumerate(options[:-1]) if a in ("--compute", "-c")]
        else:
            strings = [t.string for t in _tokens(self.code) if t.type == tokenize.STRING]
            named = [p for p in PROVIDERS + CLOUD if f'"{p}"' in strings or f"'{p}'" in strings]
            if any(t.string == "SSHCompute" for t in _tokens(self.code)):
                named.append("ssh")
            if f'"{HOSTED}"' in strings:
                named.append(HOSTED)
        return tuple(named)

    @property
    def uses_a_model(self) -> bool:
        return self.lang == "python" and "Agent(" in self.code


def _tokens(code: str) -> list[tokenize.TokenInfo]:
    return list(tokenize.generate_tokens(io.StringIO(code).readline))


def readme_snippets(text: str, file: str = "README") -> list[Snippet]:
    """The ```python fences, and the `praisonai …` commands (split on `&&`) of the ```bash ones."""
    snippets: list[Snippet] = []
    lines = text.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        fence = re.fullmatch(r"```(\w*)\s*", lines[i])
        if not fence:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        before = lines[i - 1] if i else ""
        marker = re.fullmatch(r"<!-- readme-test: skip \((.+)\) -->\s*", before)
        skip = marker.group(1) if marker else None
        body = "".join(lines[i + 1 : end])
        if fence.group(1) == "python":
            snippets.append(Snippet("python", i + 2, body, skip))
        elif fence.group(1) == "bash":
            snippets += _commands(i + 2, lines[i + 1 : end], skip)
        i = end + 1
    return [dataclasses.replace(s, file=file) for s in snippets]


def _commands(first_line: int, lines: list[str], skip: str | None) -> list[Snippet]:
    commands = []
    for n, line in enumerate(lines, first_line):
        code, _, comment = line.partition("   #")  # README comments sit after a gap of spaces
        prints = re.match(r"\s*prints (.+)", comment)
        for part in code.split("&&"):
            if part.strip().startswith("praisonai "):
                expect = (prints.group(1).strip() + "\n",) if prints else ()
                commands.append(Snippet("bash", n, part.strip(), skip, expect))
    return commands


def _with_expectations(snippets: list[Snippet]) -> list[Snippet]:
    result = list(snippets)
    for fragment, expect in EXPECTED.items():
        hits = [i for i, s in enumerate(result) if s.lang == "python" and fragment in s.code]
        assert len(hits) == 1, f"EXPECTED[{fragment!r}] matches {len(hits)} README snippets, not one"
        s = result[hits[0]]
        result[hits[0]] = dataclasses.replace(s, expect=expect)
    return result


SNIPPETS = _with_expectations(
    [s for page in PAGES for s in readme_snippets(page.read_text(), str(page.relative_to(ROOT)))]
)
RUNS = [
    pytest.param(s, p, id=f"{Path(s.file).stem}-{s.lang}-L{s.line}-{p}")
    for s in SNIPPETS
    for p in s.providers
]


def test_the_readme_has_the_snippets_this_test_knows() -> None:
    """A README that loses its quick start or its Python snippets should not pass by running less."""
    assert any(s.lang == "bash" and s.expect == ("4\n",) for s in SNIPPETS), "the quick start is gone"
    assert sum(s.lang == "python" for s in SNIPPETS) >= 8
    assert {p for s in SNIPPETS for p in s.providers} == {"local", "docker", "ssh", "e2b", "daytona", HOSTED}


@pytest.mark.parametrize(("snippet", "provider"), RUNS)
def test_readme_snippet_runs(
    snippet: Snippet, provider: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if snippet.skip:
        pytest.skip(f"{snippet.where}: {snippet.skip}")
    code = snippet.code
    server: SSHServer | None = None
    if provider in CLOUD:
        request.getfixturevalue("docker_ok")
        pytest.importorskip(provider)
        cloud = request.getfixturevalue("cloud_fakes")[provider]
    elif provider == "docker":
        request.getfixturevalue("docker_ok")
    elif provider == "ssh":
        server = request.getfixturevalue("sshd")
        code = _on_test_sshd(code, server)
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    if provider == HOSTED:
        url = request.getfixturevalue("hosted_fake").url
        hosted_env = {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": MANAGED_API_KEY}
        _run_and_check(snippet, code, work, home, None, hosted_env)
        return
    if not snippet.named_providers:  # it uses the default: make it this provider
        (work / ".praisonai").mkdir()
        (work / ".praisonai" / "environment.yaml").write_text(f"backend: {provider}\n")
    if provider not in CLOUD:
        _run_and_check(snippet, code, work, home, server)
        return
    _run_and_check(snippet, code, work, home, None, cloud.env)
    with mock.patch.dict(os.environ, cloud.env):  # E2B's SDK reads them per call; scoped to this check
        listed = _portal.call(cloud.provider().list_instances)
    left = [i.instance_id for i in listed if i.status != "stopped"]
    assert not left, f"{snippet.where} left {provider} sandboxes behind: {left}"


@dataclass(frozen=True)
class CloudFake:
    """A vendor's wire fake as a snippet's child sees it: the SDK variables that point at it."""

    env: dict[str, str]
    provider: Any  # () -> a provider of ours talking to the fake


@pytest.fixture(scope="module")
def hosted_fake() -> Iterator[ManagedAgentsFake]:
    """The Managed Agents fake: each session says one line, reports its usage and ends its turn."""
    with ManagedAgentsFake([say("Done: fib.py and its test pass."), usage(), end_turn()]) as fake:
        yield fake


@pytest.fixture(scope="module")
def cloud_fakes(docker_ok: None) -> Iterator[dict[str, CloudFake]]:
    """Each cloud vendor's fake, started on first use and stopped with the module."""
    with contextlib.ExitStack() as stack:
        yield _LazyFakes(stack)


class _LazyFakes(dict[str, CloudFake]):
    def __init__(self, stack: contextlib.ExitStack) -> None:
        super().__init__()
        self._stack = stack

    def __missing__(self, vendor: str) -> CloudFake:
        if vendor == "e2b":
            from fakes.e2b import E2BFake

            from praisonai.compute.providers.e2b import E2BCompute

            env = self._stack.enter_context(E2BFake()).env()
            made = CloudFake(env, E2BCompute)
        elif vendor == "daytona":
            from fakes.daytona import DaytonaFake

            from praisonai.compute.providers.daytona import DaytonaCompute

            fake = self._stack.enter_context(DaytonaFake())
            env = {"DAYTONA_API_KEY": "fake-key", "DAYTONA_API_URL": fake.api_url}
            made = CloudFake(env, lambda: DaytonaCompute(api_key="fake-key", api_url=fake.api_url))
        else:
            raise KeyError(f"no wire fake wired up for {vendor} snippets")
        self[vendor] = made
        return made


def _run_and_check(
    snippet: Snippet,
    code: str,
    work: Path,
    home: Path,
    server: SSHServer | None,
    extra_env: dict[str, str] | None = None,
) -> None:
    """Run ``code`` (``snippet``, maybe adapted) in ``work`` with ``home`` (and ``extra_env``); assert
    it exits 0, prints what is expected and leaves nothing behind (what it left is removed all the same)."""
    env = {**child_env(home), **(extra_env or {})}
    ssh_before = ssh_instances(server)
    try:
        with _model_for(snippet, env):
            out, err, status = _run(snippet, code, work, env)
        print(out, err, sep="\n--- stderr ---\n")
        assert status == 0, f"{snippet.where} exited {status}:\n{err[-3000:]}"
        for fragment in snippet.expect:
            assert fragment in out, f"{snippet.where} should print {fragment!r}"
    finally:
        left = remove_leftovers(home, ssh_instances(server) - ssh_before)
    assert not left, f"{snippet.where} left things behind: {left}"


def _on_test_sshd(code: str, server: SSHServer) -> str:
    for example, ours in SSH_SUBSTITUTIONS.items():
        assert code.count(example) >= 1, f"the SSH snippet no longer has {example!r}"
        code = code.replace(example, ours.format(**server.connect_kwargs()), 1)
    return code


def _run(snippet: Snippet, code: str, work: Path, env: dict[str, str]) -> tuple[str, str, int]:
    argv = [sys.executable, "-c", code] if snippet.lang == "python" else shlex.split(code)
    child = subprocess.Popen(
        argv, cwd=work, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        out, err = child.communicate(timeout=SNIPPET_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        out, err = child.communicate()
        pytest.fail(f"{snippet.where} ran past {SNIPPET_TIMEOUT_S} s:\n{out}\n{err[-3000:]}")
    return out, err, child.returncode


@contextlib.contextmanager
def _model_for(snippet: Snippet, env: dict[str, str]) -> Iterator[None]:
    """For an agent snippet, a scripted model its openai client reaches through ``env``."""
    if not snippet.uses_a_model:
        yield
        return
    pytest.importorskip("openai", reason="agent snippets need the llm extra (openai)")
    with ScriptedLLM(scripted_model) as llm:
        env.update(OPENAI_BASE_URL=llm.openai_kwargs()["base_url"], OPENAI_API_KEY=API_KEY)
        yield


def scripted_model(path: str, body: dict[str, Any]) -> Reply:
    """A stand-in model that uses the tools it is given, so the snippets' tools run for real: it
    writes and reviews the file a prompt names, adds with ``add``, else runs one command; then it
    answers with the tool's result."""
    messages = body.get("messages", [])
    if messages and messages[-1]["role"] == "tool":
        return reply(str(messages[-1]["content"]))
    tools = {t["function"]["name"] for t in body.get("tools", [])}
    prompt = next((str(m["content"]) for m in messages if m["role"] == "user"), "")
    named = re.search(r"(review|write) ([\w/]+\.\w+)", prompt, re.IGNORECASE)
    if named and named.group(1).lower() == "write" and "write_file" in tools:
        return reply(tool("write_file", path=named.group(2), content="# Notes\n\nAll good.\n"))
    if named and "read_file" in tools:
        return reply(tool("read_file", path=named.group(2)))
    if "add" in tools:
        return reply(tool("add", a=2, b=3))
    if "execute_command" in tools:
        return reply(tool("execute_command", command="uname -s"))
    return reply("LGTM")
