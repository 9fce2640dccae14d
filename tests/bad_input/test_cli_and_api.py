"""Bad input to the ``praisonai`` command and the Python API: one clear sentence, nothing changed.

Each row is an input a careless user (or an agent) gives, the message fragment the answer must
hold, and for the command its exit status. Every case also asserts that no traceback was shown
and that nothing was left behind: no ledger row, no local instance directory, no container of
this home, and for calls on an open sandbox, its workspace unchanged and the sandbox still usable.
"""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kit import exit_for, left_behind

from praisonai import Sandbox
from praisonai._errors import (
    ConfigError,
    EnvironmentFileError,
    MissingDependencyError,
    PathNotFoundError,
    PathOutsideWorkspaceError,
    SandboxClosedError,
    UnknownProviderError,
    UnsupportedFeatureError,
)
from praisonai.compute.providers.local import LocalCompute

# ---- the command ----------------------------------------------------------------------------

BAD_FILES = {
    "invalid.yaml": "setup: [true\n",
    "zero-timeout.yaml": "setup_timeout: 0\n",
    "nan-timeout.yaml": "setup_timeout: .nan\n",
    "text-timeout.yaml": "setup_timeout: '5'\n",
    "typo.yaml": "setup_timout: 5\n",
    "bad-env.yaml": "env: {1A: x}\n",
}
RUN = ("sandbox", "run", "-c", "local")
CLI_CASES: list[tuple[tuple[str, ...], int, str]] = [
    ((*RUN, "--timeout", "nan", "--", "true"), 2, "--timeout must be a finite number of seconds >= 0"),
    ((*RUN, "--timeout", "inf", "--", "true"), 2, "not inf"),
    ((*RUN, "--timeout", "-1", "--", "true"), 2, "not -1.0"),
    ((*RUN, "--timeout", "soon", "--", "true"), 2, "Invalid value for '--timeout'"),
    (("sandbox", "run", "-c", "nope", "--", "true"), 2, "unknown compute provider 'nope'"),
    ((*RUN, "-e", "BAD", "--", "true"), 2, "--env takes KEY=VALUE, not 'BAD'"),
    ((*RUN, "-e", "1A=x", "--", "true"), 2, "'1A' is not a valid environment variable name"),
    ((*RUN, "--image", "x", "--", "true"), 2, "the local provider cannot honour image"),
    ((*RUN, "--environment", "{dir}/missing.yaml", "--", "true"), 2, "missing.yaml: no such file"),
    (
        (*RUN, "--environment", "{dir}/invalid.yaml", "--no-environment", "--", "true"),
        2,
        "exclude each other",
    ),
    ((*RUN, "--environment", "{dir}/invalid.yaml", "--", "true"), 2, "invalid.yaml:"),
    (
        (*RUN, "--environment", "{dir}/zero-timeout.yaml", "--", "true"),
        2,
        "setup_timeout: must be a finite number of seconds > 0",
    ),
    (
        (*RUN, "--environment", "{dir}/nan-timeout.yaml", "--", "true"),
        2,
        "setup_timeout: must be a finite number",
    ),
    ((*RUN, "--environment", "{dir}/text-timeout.yaml", "--", "true"), 2, "setup_timeout: must be a number"),
    ((*RUN, "--environment", "{dir}/typo.yaml", "--", "true"), 2, "setup_timout"),
    ((*RUN, "--environment", "{dir}/bad-env.yaml", "--", "true"), 2, "env"),
    (RUN, 2, "Missing argument"),
    (("sandbox", "run", "-c", "local", "--bogus", "--", "true"), 2, "No such option: --bogus"),
    (("compute", "stop"), 2, "name the instances to stop, or give --all"),
    (("compute", "stop", "local_000000000000"), 1, "no instance 'local_000000000000'"),
    (("nosuchgroup",), 2, "No such command 'nosuchgroup'"),
    (("env", "validate", "{dir}/invalid.yaml"), 2, "invalid.yaml:"),
]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from praisonai.cli import main; main()", *args],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip


@pytest.fixture
def files(tmp_path: Path) -> Path:
    for name, text in BAD_FILES.items():
        (tmp_path / name).write_text(text)
    return tmp_path


@pytest.mark.parametrize(
    ("args", "code", "fragment"), CLI_CASES, ids=lambda v: " ".join(v) if isinstance(v, tuple) else None
)
def test_the_command_answers_bad_input_in_one_sentence(
    home: Path, files: Path, args: tuple[str, ...], code: int, fragment: str
) -> None:
    r = cli(*(a.replace("{dir}", str(files)) for a in args))
    assert r.returncode == exit_for(args, code), r.stderr
    assert fragment in r.stderr, r.stderr
    assert "Traceback" not in r.stderr + r.stdout and len(r.stderr.strip().splitlines()) <= 4
    assert left_behind(home) == []


# ---- the Python API: creating a sandbox ----------------------------------------------------


def _no_paramiko(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "paramiko" else real(name, *a)
    )


CREATE_CASES: list[tuple[str, dict[str, Any], type[Exception], str]] = [
    ("unknown provider", {"compute": "nope"}, UnknownProviderError, "unknown compute provider 'nope'"),
    (
        "provider of a wrong type",
        {"compute": 5},
        TypeError,
        "compute must be a provider name or a provider object",
    ),
    (
        "config of a wrong type",
        {"compute": "local", "config": 5},
        ConfigError,
        "config must be a ComputeConfig",
    ),
    (
        "unknown field",
        {"compute": "local", "timeout": 5},
        ConfigError,
        "timeout: Extra inputs are not permitted",
    ),
    ("negative cpu", {"compute": "local", "cpu": -1}, ConfigError, "cpu must be a number of cores from 0.01"),
    (
        "field the provider lacks",
        {"compute": "local", "image": "x"},
        UnsupportedFeatureError,
        "cannot honour image",
    ),
    (
        "env name",
        {"compute": "local", "env": {"1A": "x"}},
        ConfigError,
        "'1A' is not a valid environment variable",
    ),
    ("setup_timeout_s True", {"compute": "local", "setup_timeout_s": True}, ConfigError, "not bool True"),
    ("setup_timeout_s text", {"compute": "local", "setup_timeout_s": "5"}, ConfigError, "not str '5'"),
    ("setup_timeout_s nan", {"compute": "local", "setup_timeout_s": math.nan}, ConfigError, "not nan"),
    ("setup_timeout_s zero", {"compute": "local", "setup_timeout_s": 0}, ConfigError, "> 0"),
    (
        "missing environment file",
        {"compute": "local", "environment": "/nonexistent/e.yaml"},
        EnvironmentFileError,
        "no such file",
    ),
    (
        "environment of a wrong type",
        {"compute": "local", "environment": 5},
        ConfigError,
        "environment must be a path, True, False or None",
    ),
    ("missing extra", {"compute": "ssh"}, MissingDependencyError, "pip install 'praisonai[ssh]'"),
]


@pytest.mark.parametrize(
    ("kwargs", "error", "fragment"), [c[1:] for c in CREATE_CASES], ids=[c[0] for c in CREATE_CASES]
)
def test_create_refuses_bad_arguments_and_makes_nothing(
    home: Path, monkeypatch: pytest.MonkeyPatch, kwargs: dict[str, Any], error: type[Exception], fragment: str
) -> None:
    if kwargs.get("compute") == "ssh":
        _no_paramiko(monkeypatch)
    kwargs.setdefault("environment", False)
    with pytest.raises(error) as caught:
        Sandbox.create(**kwargs).close()
    assert fragment in str(caught.value) and "\n" not in str(caught.value)
    assert left_behind(home) == []


# ---- the Python API: calls on an open sandbox -------------------------------------------------

Call = Callable[[Sandbox], object]
CALL_CASES: list[tuple[str, Call, type[Exception], str]] = [
    ("command int", lambda sb: sb.exec(5), ConfigError, "must be a string or a non-empty list"),  # type: ignore[arg-type]
    ("command empty list", lambda sb: sb.exec([]), ConfigError, "must be a string or a non-empty list"),
    ("command list of ints", lambda sb: sb.exec([1, 2]), ConfigError, "must be a string or a non-empty list"),  # type: ignore[list-item]
    ("command NUL", lambda sb: sb.exec("echo a\0b"), ConfigError, "NUL byte"),
    ("command blank", lambda sb: sb.exec("  "), ConfigError, "the command is empty"),
    ("timeout text", lambda sb: sb.exec("true", timeout="5"), ConfigError, "not str '5'"),  # type: ignore[arg-type]
    ("timeout True", lambda sb: sb.exec("true", timeout=True), ConfigError, "not bool True"),
    ("timeout nan", lambda sb: sb.exec("true", timeout=math.nan), ConfigError, "not nan"),
    ("timeout inf", lambda sb: sb.exec("true", timeout=math.inf), ConfigError, "not inf"),
    ("timeout negative", lambda sb: sb.exec("true", timeout=-1), ConfigError, "not -1"),
    ("timeout zero", lambda sb: sb.exec("true", timeout=0), ConfigError, "> 0 (None for no limit), not 0"),
    ("cwd int", lambda sb: sb.exec("true", cwd=5), ConfigError, "cwd must be"),  # type: ignore[arg-type]
    ("cwd missing", lambda sb: sb.exec("true", cwd="nowhere"), PathNotFoundError, "nowhere"),
    ("env list", lambda sb: sb.exec("true", env=["A=1"]), ConfigError, "env must be a mapping"),  # type: ignore[arg-type]
    ("env name", lambda sb: sb.exec("true", env={"A-B": "1"}), ConfigError, "'A-B' is not a valid"),
    ("env value int", lambda sb: sb.exec("true", env={"A": 1}), ConfigError, "env.A"),  # type: ignore[dict-item]
    ("max_output zero", lambda sb: sb.exec("true", max_output=0), ConfigError, "max_output must be"),
    ("max_output True", lambda sb: sb.exec("true", max_output=True), ConfigError, "max_output must be"),
    ("stdin int", lambda sb: sb.exec("cat", stdin=5), ConfigError, "stdin must be bytes"),  # type: ignore[arg-type]
    ("read path int", lambda sb: sb.read_file(5), ConfigError, "a path must be a non-empty string"),  # type: ignore[arg-type]
    ("read path empty", lambda sb: sb.read_file(""), ConfigError, "a path must be a non-empty string"),
    ("read path NUL", lambda sb: sb.read_file("a\0b"), ConfigError, "without NUL bytes"),
    ("read missing", lambda sb: sb.read_file("missing.txt"), PathNotFoundError, "missing.txt"),
    ("read outside", lambda sb: sb.read_file("../../../etc/passwd"), PathOutsideWorkspaceError, "outside"),
    ("write data int", lambda sb: sb.write_file("f.txt", 5), ConfigError, "data must be bytes or text"),  # type: ignore[arg-type]
    ("write data None", lambda sb: sb.write_file("f.txt", None), ConfigError, "data must be bytes or text"),  # type: ignore[arg-type]
    ("write path int", lambda sb: sb.write_file(5, "x"), ConfigError, "a path must be a non-empty string"),  # type: ignore[arg-type]
    (
        "write outside",
        lambda sb: sb.write_file("/etc/praisonai-x", "x"),
        PathOutsideWorkspaceError,
        "outside",
    ),
    ("wait timeout nan", lambda sb: sb.start("sleep 5").wait(timeout=math.nan), ConfigError, "not nan"),
]


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    sb = Sandbox.create(LocalCompute(root=tmp_path_factory.mktemp("bad-input-local")), environment=False)
    sb.write_file("keep.txt", "kept")
    yield sb
    sb.close()


@pytest.mark.parametrize(
    ("call", "error", "fragment"), [c[1:] for c in CALL_CASES], ids=[c[0] for c in CALL_CASES]
)
def test_calls_refuse_bad_arguments_and_change_nothing(
    sandbox: Sandbox, call: Call, error: type[Exception], fragment: str
) -> None:
    workspace = Path(sandbox.info.metadata["workspace"])
    before = sorted(p.name for p in workspace.iterdir())
    with pytest.raises(error) as caught:
        call(sandbox)
    assert fragment in str(caught.value), str(caught.value)
    for process in sandbox.processes():  # a case that started one ends it
        process.kill()
    assert sorted(p.name for p in workspace.iterdir()) == before
    assert sandbox.exec("cat keep.txt").stdout == "kept"  # still usable, files intact


def test_a_closed_sandbox_refuses_every_call(home: Path) -> None:
    sb = Sandbox.create("local", environment=False)
    sb.close()
    for call in (lambda: sb.exec("true"), lambda: sb.read_file("f"), lambda: sb.write_file("f", "x")):
        with pytest.raises(SandboxClosedError, match="is closed"):
            call()
    assert left_behind(home) == []


# ---- defect 23: a long command line runs the same on every provider ------------------------------


@pytest.fixture(params=["local", "local-isolated", "docker"])
def any_sandbox(request: pytest.FixtureRequest, home: Path) -> Iterator[Sandbox]:
    if request.param == "docker":
        request.getfixturevalue("docker_ok")
        compute: object = "docker"
    else:
        if request.param == "local-isolated":
            request.getfixturevalue("bwrap_ok")
        compute = LocalCompute(isolate=request.param == "local-isolated")
    sb = Sandbox.create(compute, environment=False)
    yield sb
    sb.close()


def test_a_one_megabyte_command_runs_on_every_provider(any_sandbox: Sandbox) -> None:
    """Linux refuses one argv string over 128 KiB; the command must run anyway, with ``sh -c``'s
    meaning of ``$0``, ``$#`` and ``exit``, and leave no file behind."""
    command = "x=" + "a" * (1 << 20) + '; echo "${#x} $#"; exit 3'
    result = any_sandbox.exec(command)
    assert (result.exit_code, result.stdout, result.stderr) == (3, f"{1 << 20} 0\n", "")
    assert any_sandbox.exec("echo short").stdout == "short\n"
    if isinstance(any_sandbox.provider, LocalCompute):
        assert not list((any_sandbox.provider.root / any_sandbox.id / "commands").glob("*"))
