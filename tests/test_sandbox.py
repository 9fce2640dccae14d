"""The Sandbox handles: sync/async parity, ownership, check=True, use inside a running loop."""

from __future__ import annotations

import asyncio
import inspect
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from praisonai import (
    AsyncSandbox,
    CommandFailedError,
    CommandTimeoutError,
    Sandbox,
    SandboxClosedError,
    UnsupportedFeatureError,
)
from praisonai._errors import EnvironmentFileError


def test_sync_face_mirrors_every_async_method() -> None:
    async_api = {
        n for n, f in vars(AsyncSandbox).items() if inspect.iscoroutinefunction(f) and not n.startswith("_")
    }
    async_api -= {"aclose"}  # the sync spelling is close()
    missing = {n for n in async_api if not callable(getattr(Sandbox, n, None))}
    assert not missing


def test_owned_sandbox_round_trip_and_close() -> None:
    with Sandbox.create("local", env={"GREETING": "hi"}) as sb:
        sb.write_file("/workspace/a.bin", b"\x00\xff")
        assert sb.read_file("a.bin") == b"\x00\xff"
        assert sb.exec("echo $GREETING").stdout == "hi\n"
        with pytest.raises(CommandFailedError) as info:
            sb.exec("exit 4", check=True)
        assert info.value.result.exit_code == 4
        with pytest.raises(CommandTimeoutError):
            sb.exec("sleep 5", timeout=0.5, check=True)
    assert sb.closed
    with pytest.raises(SandboxClosedError):
        sb.exec("true")
    sb.close()  # idempotent


def test_blocking_handles_close_at_the_end_of_their_with(home: Path) -> None:
    """A session and a terminal are context managers; a process handle reads as its async one."""
    with Sandbox.create("local") as sb:
        with sb.session() as shell:
            shell.run("cd sub 2>/dev/null || mkdir sub && cd sub")
            assert shell.run("pwd").stdout.endswith("/sub\n")
        assert not shell.run("pwd").stdout.endswith("/sub\n")  # closed: the next run is a new shell
        with sb.pty("echo term-$((6*7))") as term:
            assert b"term-42" in b"".join(term)
        process = sb.start("echo bg")
        assert process.wait(timeout=30).exit_code == 0 and process.logs() == b"bg\n"
        assert sb.process(process.id).id == process.id


def test_connect_borrows_and_does_not_shut_down() -> None:
    with Sandbox.create("local") as owner:
        borrowed = Sandbox.connect(owner.id)
        borrowed.close()
        assert owner.exec("echo alive").stdout == "alive\n"


def test_sync_face_inside_a_running_event_loop() -> None:
    async def main() -> str:
        with Sandbox.create("local") as sb:
            return sb.exec("echo $((2+2))").stdout

    assert asyncio.run(main()) == "4\n"


def test_async_sandbox() -> None:
    async def main() -> None:
        async with await AsyncSandbox.create("local") as sb:
            await sb.write_file("x.txt", "text")
            assert (await sb.exec("cat x.txt")).stdout == "text"

    anyio.run(main)


@pytest.mark.usefixtures("docker_ok")
def test_docker_sandbox_end_to_end() -> None:
    with Sandbox.create("docker") as sb:
        assert sb.exec("python3 -c 'print(2+2)'").stdout == "4\n"


# ---- Sandbox.run: one command in a fresh instance ----------------------------------------------


@pytest.mark.usefixtures("docker_ok")
def test_run_one_shot_on_docker_keeps_output_stdin_and_exit_code() -> None:
    seen: list[tuple[str, bytes]] = []
    result = Sandbox.run(
        "cat; echo err >&2; exit 3",
        "docker",
        environment=False,
        stdin="in",
        on_output=lambda name, data: seen.append((name, data)),
    )
    assert (result.stdout, result.stderr, result.exit_code) == ("in", "err\n", 3)
    assert b"".join(d for n, d in seen if n == "stdout") == b"in"
    with pytest.raises(CommandTimeoutError):
        Sandbox.run("sleep 5", "docker", environment=False, timeout=1, check=True)


@pytest.mark.usefixtures("home")
def test_run_provisions_when_the_config_has_steps_and_removes_the_instance() -> None:
    from praisonai.compute.registry import compute_provider

    async def main() -> None:
        result = await AsyncSandbox.run(
            ["sh", "-c", "cat marker"], "local", environment=False, setup=["echo set > marker"]
        )
        assert result.stdout == "set\n"
        with pytest.raises(CommandFailedError):
            await AsyncSandbox.run("exit 5", "local", environment=False, check=True)
        assert await compute_provider("local").list_instances() == []

    anyio.run(main)


def test_run_through_a_sandbox_says_to_use_exec() -> None:
    """``sandbox.run(cmd)`` (how other SDKs run a command in *their* sandbox) would make a fresh
    instance elsewhere: it is refused with the method that runs in this one."""
    with Sandbox.create("local", environment=False) as sandbox:
        with pytest.raises(AttributeError, match=r"fresh instance.*call its exec\(command\)"):
            sandbox.run("true")
        with pytest.raises(AttributeError, match=r"AsyncSandbox\.run runs a command in a fresh instance"):
            sandbox._inner.run("true")


@pytest.mark.usefixtures("docker_ok", "home")
def test_docker_sandbox_and_one_shot_load_docker_py_and_pydantic_only() -> None:
    """What a process that creates a docker sandbox and runs a one-shot loads of the heavy
    libraries: docker-py and pydantic (the config models); no other SDK, no rich, PyYAML or typer."""
    heavy = {"pydantic", "rich", "docker", "e2b", "modal", "daytona", "httpx", "paramiko", "asyncssh"}
    heavy |= {"anthropic", "kubernetes", "yaml", "typer", "openai"}
    code = (
        "import sys\nfrom praisonai import Sandbox\n"
        "with Sandbox.create('docker', environment=False) as sb:\n    sb.exec('true', check=True)\n"
        "Sandbox.run('true', 'docker', environment=False, check=True)\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({sorted(heavy)!r})))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "['docker', 'pydantic']"


# ---- .praisonai/environment.yaml ---------------------------------------------------------------


@pytest.fixture
def env_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository, the working directory, declaring its environment."""
    (tmp_path / ".git").mkdir()
    (tmp_path / ".praisonai").mkdir()
    (tmp_path / ".praisonai" / "environment.yaml").write_text(
        "env:\n  FROM_FILE: yes-file\n  SHARED: file\nsetup: echo set-up > setup.txt\n"
    )
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_create_reads_the_environment_file_of_the_working_directory(env_repo: Path) -> None:
    with Sandbox.create("local", env={"SHARED": "arg"}) as sb:
        assert sb.exec('echo "$FROM_FILE $SHARED"').stdout == "yes-file arg\n"  # env merges, explicit wins
        assert sb.exec("cat setup.txt").stdout == "set-up\n"


def test_create_with_an_explicit_environment_path(env_repo: Path, tmp_path: Path) -> None:
    other = tmp_path / "elsewhere.yaml"  # outside .praisonai: any path may be given
    other.write_text("env: {FROM_FILE: other}\n")
    with Sandbox.create("local", environment=other) as sb:
        assert sb.exec('echo "$FROM_FILE"').stdout == "other\n"


def test_create_with_environment_false_reads_no_file(env_repo: Path) -> None:
    with Sandbox.create("local", environment=False) as sb:
        assert sb.exec('echo "${FROM_FILE:-unset}"').stdout == "unset\n"


def test_an_invalid_environment_file_fails_before_provisioning(env_repo: Path) -> None:
    (env_repo / ".praisonai" / "environment.yaml").write_text("env:\n  SHARED: x\ncapture: 'false'\n")
    with pytest.raises(EnvironmentFileError, match=r"environment.yaml:3: capture: must be true or false"):
        Sandbox.create("local")


def test_the_files_backend_picks_the_provider_unless_one_is_named(env_repo: Path) -> None:
    (env_repo / ".praisonai" / "environment.yaml").write_text("backend: local\nenv: {X: '1'}\n")

    async def main() -> str:
        async with await AsyncSandbox.create() as sb:
            return sb.provider.provider_name

    assert anyio.run(main) == "local"
    (env_repo / ".praisonai" / "environment.yaml").write_text("backend: docker\nimage: no-such-image\n")
    with pytest.raises(UnsupportedFeatureError, match="cannot honour image"):
        Sandbox.create("local")  # the caller's provider wins; the file's image is still asked for
