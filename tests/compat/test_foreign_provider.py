"""A PraisonAI user's own provider (``user_compute.SubprocessCompute``, written to PraisonAI's
protocol, really running every command) used through SharedCompute and Sandbox unchanged."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from user_compute import SubprocessCompute

import praisonai
from praisonai import Sandbox
from praisonai._errors import InstanceNotFoundError, PathNotFoundError
from praisonai._ledger import Ledger
from praisonai.managed.shared import SESSIONLESS_NOTE, SharedCompute

_REPO = str(Path(praisonai.__file__).parents[1])


@pytest.fixture
def user_compute(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SubprocessCompute]:
    monkeypatch.chdir(tmp_path)  # no environment file of the repo's
    compute = SubprocessCompute()
    yield compute
    compute.close()


@pytest.fixture
def sandbox(user_compute: SubprocessCompute, tmp_path: Path) -> Iterator[Sandbox]:
    with Sandbox.create(user_compute, working_dir=str(tmp_path / "ws")) as box:
        yield box


class _Agent:
    def __init__(self, name: str) -> None:
        self.name, self.instructions, self.tools = name, f"You are {name}.", []


def test_shared_compute_runs_a_team_on_the_users_provider(
    user_compute: SubprocessCompute, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    agent = _Agent("writer")
    with SharedCompute(user_compute, working_dir=str(workspace)) as shared:
        shared.attach([agent], loop_tools=True)
        execute_command, read_file, write_file, list_files, edit_file, grep, glob = agent.tools
        assert user_compute.configs == [], "nothing is provisioned before a tool is used"
        assert write_file("notes/plan.md", "step 1\nstep 2") == "Wrote 13 bytes to notes/plan.md"
        assert execute_command("pwd && cat notes/plan.md") == f"{workspace}\nstep 1\nstep 2"
        assert read_file("notes/plan.md") == "step 1\nstep 2"
        assert list_files("notes") == "plan.md"
        assert (workspace / "notes" / "plan.md").read_bytes() == b"step 1\nstep 2"
        assert edit_file("notes/plan.md", "step 2", "step two") == "Replaced 1 occurrence in notes/plan.md"
        assert grep("step t[a-z]+", "notes") == "notes/plan.md:2:step two"
        assert glob("**/*.md") == "notes/plan.md"
        write_file("notes/plan.md", "step 1\nstep 2")
        # No persistent session: each command is its own shell in the working dir, and both say so.
        execute_command("cd / && export MARK=set")
        assert execute_command("pwd; echo ${MARK:-unset}") == f"{workspace}\nunset"
        assert "its own shell" in (execute_command.__doc__ or "")
        assert SESSIONLESS_NOTE in agent.instructions
        assert shared.run_command("exit 3")["exit_code"] == 3
        (instance,) = user_compute.roots
        assert shared.instance_id == instance, "the id is the one the user's provision returned"
        assert Ledger.default().get(instance) is None, "no ledger row: no other process can rebuild it"
        config = user_compute.configs[0]
        assert (config.working_dir, config.networking, config.image) == (
            str(workspace),
            {"type": "unrestricted"},
            "python:3.12-slim",
        )
    assert user_compute.shutdowns == [instance]
    shared.shutdown()
    assert user_compute.shutdowns == [instance], "a second shutdown does not call theirs again"
    assert agent.tools == [] and SESSIONLESS_NOTE not in agent.instructions


def test_first_calls_from_many_threads_provision_one_instance(user_compute: SubprocessCompute) -> None:
    with SharedCompute(user_compute, working_dir="/tmp") as shared:
        execute_command = shared.build_tools()[0]
        barrier, answers = threading.Barrier(6), []

        def first_call() -> None:
            barrier.wait()
            answers.append(execute_command("echo hi"))

        threads = [threading.Thread(target=first_call) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert answers == ["hi"] * 6
        assert len(user_compute.configs) == 1


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"line1\nPRAISONAI_EOF_\n'q' $HOME `id` \\n\nEOF", id="heredoc-like"),
        pytest.param(b"no trailing newline", id="no-newline"),
        pytest.param(b"ends in newline\n\n", id="newline"),
        pytest.param(b"", id="empty"),
        pytest.param(b"\x00\xff binary \x00\r\n", id="binary"),
        pytest.param(os.urandom(3 * 1024 * 1024 + 7), id="3MiB"),
        pytest.param(b"text\n" * 40_000, id="text-over-inline-limit"),
    ],
)
def test_files_round_trip_exactly(sandbox: Sandbox, tmp_path: Path, data: bytes) -> None:
    sandbox.write_file("deep/dir/file.bin", data)
    assert sandbox.read_file("deep/dir/file.bin") == data
    assert (tmp_path / "ws" / "deep" / "dir" / "file.bin").read_bytes() == data
    assert os.listdir(tmp_path / "ws" / "deep" / "dir") == ["file.bin"], "no temporary file is left"


def test_a_failed_chunked_write_leaves_nothing(sandbox: Sandbox, tmp_path: Path) -> None:
    (tmp_path / "ws" / "taken").write_text("a file, not a directory")
    with pytest.raises(Exception, match="taken"):
        sandbox.write_file("taken/big.bin", os.urandom(200_000))
    assert os.listdir(tmp_path / "ws") == ["taken"]


def test_exec_honours_cwd_env_stdin_and_timeout(sandbox: Sandbox, tmp_path: Path) -> None:
    (tmp_path / "ws" / "sub").mkdir()
    command = 'pwd; printf "%s|" "$GREETING"; cat'
    result = sandbox.exec(command, cwd="sub", env={"GREETING": "it's $x"}, stdin=b"in")
    assert result.stdout == f"{tmp_path / 'ws' / 'sub'}\nit's $x|in"
    assert sandbox.exec("-dash", cwd="sub").exit_code == 127, "a command starting with '-' is no option of sh"
    with pytest.raises(PathNotFoundError, match="nowhere"):
        sandbox.exec("true", cwd="nowhere")
    # The whole tree is killed inside the instance at the deadline, not left running.
    timed = sandbox.exec("sleep 60 & echo $! > pid; wait", timeout=1)
    assert (timed.timed_out, timed.exit_code) == (True, 124)
    assert not _running(int((tmp_path / "ws" / "pid").read_text()))


def _running(pid: int) -> bool:
    """Whether the process is alive (this instance is a directory on this host); a killed one that
    nobody reaped yet (a zombie, state Z) is not."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_directories_upload_and_download_through_execute(sandbox: Sandbox, tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "inner").mkdir(parents=True)
    (tree / "inner" / "a.bin").write_bytes(b"\x00\x01")
    (tree / "b.txt").write_text("b")
    sandbox.upload(tree, "copy")
    assert sandbox.exec("find copy -type f | sort").stdout == "copy/b.txt\ncopy/inner/a.bin\n"
    sandbox.download("copy", tmp_path / "back")
    assert (tmp_path / "back" / "inner" / "a.bin").read_bytes() == b"\x00\x01"
    assert (tmp_path / "back" / "b.txt").read_text() == "b"


def test_shutdown_is_idempotent_and_later_calls_are_refused(
    user_compute: SubprocessCompute, tmp_path: Path
) -> None:
    box = Sandbox.create(user_compute, working_dir=str(tmp_path))
    provider, instance = box.provider, box.id
    box.shutdown()
    from praisonai import _portal

    assert _portal.call(provider.shutdown, instance) is False
    assert user_compute.shutdowns == [instance]
    with pytest.raises(InstanceNotFoundError):
        _portal.call(provider.execute, instance, "true")


def test_compute_ps_and_gc_pass_over_a_users_instances(sandbox: Sandbox) -> None:
    """Its instances have no ledger row (no other process can rebuild the object by name):
    ``ps`` and ``gc`` in another process neither list them nor fail on them."""
    for command in (["ps", "--json"], ["gc", "--dry-run"]):
        run = subprocess.run(
            [sys.executable, "-m", "praisonai", "compute", *command],
            capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": _REPO},
        )  # fmt: skip
        assert run.returncode == 0, run.stderr
        assert sandbox.id not in run.stdout
