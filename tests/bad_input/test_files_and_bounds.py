"""Issue 26, items 12 and 14: files that are not regular files, numbers without bounds, and input
no program can be started with. Each case gets one clear sentence naming the input and what to
do, no traceback, no hang (a FIFO read without care blocks forever: every call here has a
timeout), and leaves nothing behind: no ledger row, no local instance, no container.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kit import exit_for, left_behind

from praisonai import Sandbox
from praisonai._errors import ConfigError, EnvironmentFileError
from praisonai.compute.providers.local import LocalCompute

_BIG = "a" * 200_000  # over Linux's 128 KiB for one environment string (E2BIG)
_LONG = "a" * 5000  # over NAME_MAX and PATH_MAX (ENAMETOOLONG)


@pytest.fixture
def place(tmp_path: Path) -> Path:
    """A folder holding every bad file the cases name: a FIFO, a garbage Modal config, an
    environment file with a 200 KB value, a repository whose environment file is a FIFO."""
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "modal.toml").write_bytes(b"garbage = = [\n\xff")
    (tmp_path / "big-env.yaml").write_text(f"env: {{K: {_BIG}}}\n")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".praisonai").mkdir()
    os.mkfifo(repo / ".praisonai" / "environment.yaml")
    return tmp_path


# ---- the command --------------------------------------------------------------------------------

RUN = ("sandbox", "run", "-c", "local")
# (id, argv, extra environment, working dir under the place, exit status, fragment of stderr)
CLI_CASES: list[tuple[str, tuple[str | bytes, ...], dict[str, str], str, int, str]] = [
    ("env validate a FIFO", ("env", "validate", "{dir}/fifo"), {}, "", 2,
     "environment file {dir}/fifo is a FIFO (named pipe), not a regular file; point it at a regular file"),
    ("run --environment a FIFO", (*RUN, "--environment", "{dir}/fifo", "--", "true"), {}, "", 2,
     "environment file {dir}/fifo is a FIFO (named pipe), not a regular file"),
    ("run in a repo whose environment file is a FIFO", (*RUN, "--", "true"), {}, "repo", 2,
     "environment.yaml is a FIFO (named pipe), not a regular file"),
    ("run a non-UTF-8 argument", (*RUN, "--", "echo", b"\xff"), {}, "", 2,
     "argument 2 of the command is not UTF-8 text (it holds the byte 0xff); commands must be UTF-8"),
    ("run a non-UTF-8 env value", (*RUN, "-e", b"K=\xff", "--", "true"), {}, "", 2,
     "env K: the value is not UTF-8 text"),
    ("run with a 200 KB env value from the file", (*RUN, "--environment", "{dir}/big-env.yaml", "--", "true"),
     {}, "", 2, "env K: 200002 bytes is more than one variable can hold (131071"),
    ("run --timeout 1e20", (*RUN, "--timeout", "1e20", "--", "true"), {}, "", 2,
     "--timeout must be at most 31622400 seconds"),
    ("run -c modal, a garbage Modal config", ("sandbox", "run", "-c", "modal", "--", "true"),
     {"MODAL_CONFIG_PATH": "{dir}/modal.toml"}, "", 2,
     "the Modal config {dir}/modal.toml is not valid ('utf-8' codec can't decode byte 0xff"),
    ("run -c modal, a FIFO Modal config", ("sandbox", "run", "-c", "modal", "--", "true"),
     {"MODAL_CONFIG_PATH": "{dir}/fifo"}, "", 2, "the Modal config {dir}/fifo is a FIFO (named pipe)"),
]  # fmt: skip


def cli(args: list[str | bytes], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from praisonai.cli import main; main()", *args],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, cwd=cwd,
        env={**os.environ, **env},
    )  # fmt: skip


@pytest.mark.parametrize(
    ("args", "env", "cwd", "code", "fragment"), [c[1:] for c in CLI_CASES], ids=[c[0] for c in CLI_CASES]
)
def test_the_command_answers_in_one_sentence(
    home: Path, place: Path, args: tuple[str | bytes, ...], env: dict[str, str], cwd: str, code: int,
    fragment: str,
) -> None:  # fmt: skip
    here = str(place)
    argv = [a.replace("{dir}", here) if isinstance(a, str) else a for a in args]
    r = cli(argv, {k: v.replace("{dir}", here) for k, v in env.items()}, place / cwd)
    assert r.returncode == exit_for(args, code), r.stderr
    assert fragment.replace("{dir}", here) in r.stderr, r.stderr
    assert "Traceback" not in r.stderr + r.stdout and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert left_behind(home) == []


@pytest.mark.parametrize(
    ("env", "provider", "fragment"),
    [
        ({"KUBECONFIG": "{dir}/fifo"}, "kubernetes", "kubeconfig {dir}/fifo is a FIFO (named pipe)"),
        ({"KUBECONFIG": "{dir}/missing:{dir}/fifo"}, "kubernetes", "kubeconfig {dir}/fifo is a FIFO"),
        (
            {"MODAL_CONFIG_PATH": "{dir}/modal.toml"},
            "modal",
            "the Modal config {dir}/modal.toml is not valid",
        ),
        ({"MODAL_CONFIG_PATH": "{dir}/fifo"}, "modal", "the Modal config {dir}/fifo is a FIFO (named pipe)"),
    ],
)
def test_compute_providers_names_an_unreadable_config_and_lists_the_rest(
    home: Path, place: Path, env: dict[str, str], provider: str, fragment: str
) -> None:
    here = str(place)
    r = cli(["compute", "providers", "--json"], {k: v.replace("{dir}", here) for k, v in env.items()}, place)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    rows = {row["name"]: row for row in json.loads(r.stdout)}
    assert rows["local"]["available"] is True
    assert not rows[provider]["available"] and fragment.replace("{dir}", here) in rows[provider]["why_not"]


# ---- the Python API: calls on an open sandbox, on every provider that runs here ---------------------

Call = Callable[[Sandbox, Path], object]
CALL_CASES: list[tuple[str, Call, type[Exception], str]] = [
    ("env NUL", lambda sb, d: sb.exec("true", env={"A": "x\0y"}), ConfigError,
     "env A: the value contains a NUL byte"),
    ("env 200 KB", lambda sb, d: sb.exec("true", env={"K": _BIG}), ConfigError,
     "env K: 200002 bytes is more than one variable can hold (131071, Linux's limit); pass large data"),
    ("env 3 MB in all", lambda sb, d: sb.exec("true", env={f"K{i}": _BIG[:100_000] for i in range(30)}),
     ConfigError, "env holds 3000140 bytes in all, more than 1048576"),
    ("env not UTF-8", lambda sb, d: sb.exec("true", env={"K": "\udcff"}), ConfigError,
     "env K: the value is not UTF-8 text"),
    ("command not UTF-8", lambda sb, d: sb.exec("echo \udcff"), ConfigError,
     "the command is not UTF-8 text (it holds the byte 0xff)"),
    ("argv not UTF-8", lambda sb, d: sb.exec(["echo", "\udcfe"]), ConfigError,
     "argument 2 of the command is not UTF-8 text (it holds the byte 0xfe)"),
    ("timeout 1e20", lambda sb, d: sb.exec("true", timeout=1e20), ConfigError,
     "timeout must be at most 31622400 seconds"),
    ("cwd 5000 chars", lambda sb, d: sb.exec("true", cwd=_LONG), ConfigError,
     "is too long (5000 bytes, a name of 5000): paths hold at most 4095 bytes, names 255"),
    ("read 5000 chars", lambda sb, d: sb.read_file(_LONG), ConfigError, "is too long (5000 bytes"),
    ("read 6000 bytes in short names", lambda sb, d: sb.read_file("/".join(["b" * 200] * 30)), ConfigError,
     "is too long (6029 bytes, a name of 200)"),
    ("write 5000 chars", lambda sb, d: sb.write_file(_LONG, "x"), ConfigError, "is too long (5000 bytes"),
    ("write not UTF-8", lambda sb, d: sb.write_file("\udcff", "x"), ConfigError,
     "the path '\\udcff' is not UTF-8 text"),
    ("upload source NUL", lambda sb, d: sb.upload(f"{d}/a\0b", "x"), ConfigError,
     "a local path must be a non-empty path without NUL bytes"),
    ("upload source 5000 chars", lambda sb, d: sb.upload(f"{d}/{_LONG}", "x"), ConfigError,
     "the local path"),
    ("upload source a loop of links", lambda sb, d: sb.upload(f"{d}/loop", "x"), ConfigError,
     "upload: the local path {dir}/loop goes through a loop of symbolic links"),
    ("upload target 5000 chars", lambda sb, d: sb.upload(f"{d}/file", _LONG), ConfigError,
     "is too long (5000 bytes"),
    ("download target NUL", lambda sb, d: sb.download("keep.txt", f"{d}/a\0b"), ConfigError,
     "a local path must be a non-empty path without NUL bytes"),
    ("download target 5000 chars", lambda sb, d: sb.download("keep.txt", f"{d}/{_LONG}"), ConfigError,
     "the local path"),
    ("download target a loop of links", lambda sb, d: sb.download("keep.txt", f"{d}/loop"), ConfigError,
     "download: the local path {dir}/loop goes through a loop of symbolic links"),
    ("download source 5000 chars", lambda sb, d: sb.download(_LONG, f"{d}/out"), ConfigError,
     "is too long (5000 bytes"),
]  # fmt: skip


@pytest.fixture(scope="module", params=["local", "docker"])
def sandbox(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    if request.param == "docker":
        request.getfixturevalue("docker_ok")
        compute: object = "docker"
    else:
        compute = LocalCompute(root=tmp_path_factory.mktemp("bad-files-local"))
    sb = Sandbox.create(compute, environment=False)
    try:
        sb.write_file("keep.txt", "kept")
        yield sb
    finally:
        sb.close()


@pytest.mark.parametrize(
    ("call", "error", "fragment"), [c[1:] for c in CALL_CASES], ids=[c[0] for c in CALL_CASES]
)
def test_calls_refuse_what_no_system_can_hold(
    sandbox: Sandbox, tmp_path: Path, call: Call, error: type[Exception], fragment: str
) -> None:
    os.symlink("loop", tmp_path / "loop")  # a link to itself: ELOOP
    (tmp_path / "file").write_text("x")
    host_before = sorted(os.listdir(tmp_path))
    before = sandbox.exec("ls -a").stdout
    with pytest.raises(error) as caught:
        call(sandbox, tmp_path)
    said = str(caught.value)
    assert fragment.replace("{dir}", str(tmp_path)) in said and "\n" not in said, said
    assert _BIG[:1000] not in said  # a value is never echoed: it may be a secret
    assert sorted(os.listdir(tmp_path)) == host_before
    assert sandbox.exec("ls -a").stdout == before
    assert sandbox.exec("cat keep.txt").stdout == "kept"  # still usable, files intact


# ---- numeric options: a finite, bounded range, said in one sentence -------------------------------


def _kubernetes(**options: Any) -> object:
    from praisonai.compute.providers.kubernetes import KubernetesCompute

    return KubernetesCompute(**options)


def _warm_pool(size: object) -> object:
    from praisonai.compute.warm import WarmPool

    return WarmPool("local", size=size)  # type: ignore[arg-type]


def _ssh(**fields: Any) -> object:
    from praisonai.compute.providers.ssh import SSHCompute

    return SSHCompute(hosts=[{"host": "127.0.0.1", **fields}])


def _daytona(**options: Any) -> object:
    from praisonai.compute.providers.daytona import DaytonaCompute

    return DaytonaCompute(**options)


def _create(**fields: Any) -> object:
    return Sandbox.create("local", environment=False, **fields).close()


_WRITES = "writes_per_s must be a number of writes a second from 0.1 to 1000, not"
_SIZE = "size must be a whole number of instances from 1 to 1000, not"
BOUND_CASES: list[tuple[str, Callable[[], object], str]] = [
    ("writes_per_s 1e-9 (waited forever)", lambda: _kubernetes(writes_per_s=1e-9), f"{_WRITES} 1e-09"),
    ("writes_per_s 0 (divided by zero)", lambda: _kubernetes(writes_per_s=0), f"{_WRITES} 0"),
    ("writes_per_s nan", lambda: _kubernetes(writes_per_s=math.nan), f"{_WRITES} nan"),
    ("writes_per_s inf", lambda: _kubernetes(writes_per_s=math.inf), f"{_WRITES} inf"),
    ("writes_per_s '3'", lambda: _kubernetes(writes_per_s="3"), f"{_WRITES} str '3'"),
    ("write_burst 0", lambda: _kubernetes(write_burst=0),
     "write_burst must be a whole number of writes from 1"),
    ("write_burst 1.5", lambda: _kubernetes(write_burst=1.5), "write_burst must be a whole number"),
    ("kubernetes cpu 0", lambda: _kubernetes(cpu=0), "cpu must be a number of cores from 0.01 to 256, not 0"),
    ("kubernetes memory 1e12", lambda: _kubernetes(memory_mb=10**12),
     "memory_mb must be a whole number of MiB"),
    ("ready_timeout_s -1", lambda: _kubernetes(ready_timeout_s=-1),
     "ready_timeout_s must be a number of seconds"),
    ("run_as_user -1", lambda: _kubernetes(run_as_user=-1),
     "run_as_user must be a whole number from 0 to 2147483647"),
    ("WarmPool size 0", lambda: _warm_pool(0), f"{_SIZE} 0"),
    ("WarmPool size -1", lambda: _warm_pool(-1), f"{_SIZE} -1"),
    ("WarmPool size nan", lambda: _warm_pool(math.nan), f"{_SIZE} nan"),
    ("WarmPool size 1e9", lambda: _warm_pool(1e9), f"{_SIZE} 1000000000.0"),
    ("WarmPool size '3'", lambda: _warm_pool("3"), f"{_SIZE} str '3'"),
    ("WarmPool size True", lambda: _warm_pool(True), f"{_SIZE} bool True"),
    ("ssh connect_timeout inf", lambda: _ssh(connect_timeout=math.inf),
     "connect_timeout must be a number of seconds"),
    ("ssh keepalive_count 0", lambda: _ssh(keepalive_count=0),
     "keepalive_count must be a whole number of probes"),
    ("daytona renew_s 0", lambda: _daytona(renew_s=0),
     "renew_s must be a number of seconds from 0.1 to 86400, not 0"),
    ("cpu nan", lambda: _create(cpu=math.nan), "cpu must be a number of cores from 0.01 to 256, not nan"),
    ("memory_mb 1e15", lambda: _create(memory_mb=10**15), "memory_mb must be a whole number of MiB from 16"),
    ("disk_mb True", lambda: _create(disk_mb=True), "disk_mb must be a whole number of MiB from 64"),
    ("gpu -1", lambda: _create(gpu=-1), "gpu must be a whole number of GPUs from 1 to 64, not -1"),
    ("idle_timeout_s 1e12", lambda: _create(idle_timeout_s=10**12),
     "idle_timeout_s must be at most 31622400 seconds"),
    ("ttl_s 1e12", lambda: _create(ttl_s=10**12), "ttl_s must be at most 31622400 seconds"),
    ("setup_timeout_s 1e20", lambda: _create(setup_timeout_s=1e20),
     "setup_timeout_s must be at most 31622400"),
]  # fmt: skip


@pytest.mark.parametrize(("make", "fragment"), [c[1:] for c in BOUND_CASES], ids=[c[0] for c in BOUND_CASES])
def test_numeric_options_have_bounds(home: Path, make: Callable[[], object], fragment: str) -> None:
    with pytest.raises(ConfigError) as caught:
        make()
    assert fragment in str(caught.value) and "\n" not in str(caught.value), str(caught.value)
    assert left_behind(home) == []


# ---- config files a library opens by path ------------------------------------------------------------


@pytest.fixture
def tls_dirs(tmp_path: Path) -> Path:
    (tmp_path / "empty").mkdir()
    fifo = tmp_path / "fifo-ca"
    fifo.mkdir()
    os.mkfifo(fifo / "ca.pem")
    for name in ("cert.pem", "key.pem"):
        (fifo / name).write_text("x")
    return tmp_path


@pytest.mark.parametrize(
    ("tls", "fragment"),
    [
        ("missing", "tls {dir}/missing must be a directory holding ca.pem, cert.pem and key.pem"),
        ("empty",
         "tls {dir}/empty must be a directory holding ca.pem, cert.pem and key.pem (as DOCKER_CERT_PATH)"),
        ("fifo-ca", "TLS file {dir}/fifo-ca/ca.pem is a FIFO (named pipe), not a regular file"),
    ],
)  # fmt: skip
def test_a_docker_host_with_a_bad_tls_dir_is_one_sentence(
    home: Path, tls_dirs: Path, tls: str, fragment: str
) -> None:
    """docker-py said ``TLSParameterError`` (or the ssl module hung on a FIFO)."""
    from praisonai.compute.providers.docker import DockerCompute

    hosts = [{"url": "tcp://127.0.0.1:1", "tls": str(tls_dirs / tls)}, "unix:///nonexistent/docker.sock"]
    with pytest.raises(ConfigError) as caught:
        DockerCompute(hosts=hosts)
    said = str(caught.value)
    assert said.startswith("docker host tcp://127.0.0.1:1: ") and "\n" not in said, said
    assert fragment.replace("{dir}", str(tls_dirs)) in said, said
    assert left_behind(home) == []


def test_a_kubeconfig_fifo_is_refused_by_the_provider_too(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "kc")
    provider = _kubernetes(kubeconfig=str(tmp_path / "kc"))
    reason = provider.unavailable_reason()  # type: ignore[attr-defined]
    assert (
        reason
        == f"kubeconfig {tmp_path}/kc is a FIFO (named pipe), not a regular file; point it at a regular file"
    )


def test_an_environment_file_that_is_a_directory_or_device_is_one_sentence(tmp_path: Path) -> None:
    from praisonai.sandbox.environment import load_environment_file

    for path, kind in ((tmp_path, "a directory"), (Path("/dev/zero"), "a device")):
        with pytest.raises(EnvironmentFileError) as caught:
            load_environment_file(path)
        assert (
            str(caught.value)
            == f"environment file {path} is {kind}, not a regular file; point it at a regular file"
        )


def test_a_download_holding_an_absolute_link_is_one_sentence(docker_ok: None, tmp_path: Path) -> None:
    """tarfile's ``AbsoluteLinkError`` reached the caller raw, after part of the tree was written."""
    from praisonai._errors import PathOutsideWorkspaceError

    with Sandbox.create("docker", environment=False) as sb:
        sb.exec("mkdir -p d && echo x > d/a && ln -s /etc/passwd d/link")
        with pytest.raises(PathOutsideWorkspaceError) as caught:
            sb.download("d", str(tmp_path / "out"))
    said = str(caught.value)
    assert "link" in said and "\n" not in said and "Traceback" not in said, said
    assert not (tmp_path / "out" / "link").is_symlink()


def test_an_ssh_key_file_that_is_a_fifo_is_one_sentence(sshd: Any, tmp_path: Path) -> None:
    """paramiko opens the key itself: a FIFO blocked the connection forever."""
    from praisonai._portal import call
    from praisonai.compute.providers.ssh import SSHCompute

    os.mkfifo(tmp_path / "key")
    provider = SSHCompute(**sshd.connect_kwargs(key_file=str(tmp_path / "key")))
    with pytest.raises(ConfigError) as caught:
        call(provider.provision)
    said = str(caught.value)
    assert f"SSH key file {tmp_path}/key is a FIFO (named pipe), not a regular file" in said, said
    assert "\n" not in said
    # Not asserted here: the ledger row a failed ssh provision leaves is issue 26 item 15 (its own fix).
