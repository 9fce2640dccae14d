"""Fault injection on the exec channel (issue 11: defects 1-4, 21, 22) against real docker, a real
sshd and real local processes. Each test asserts the contract: a command runs at most once, and a
fault is reported (``ChannelClosedError`` saying it may have run, or a clear error), never an
empty success; the helper and the commands in flight survive a caller's mistake; nothing leaks.
"""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import anyio.to_thread
import pytest
from kit import Instance, provisioned

from praisonai import _portal
from praisonai._errors import ChannelClosedError, ConfigError, ExecError, InstanceNotFoundError
from praisonai._types import ExecResult
from praisonai.compute.base import ComputeProvider
from praisonai.compute.providers.docker import DockerCompute, container_name
from praisonai.compute.providers.local import LocalCompute
from praisonai.compute.providers.ssh import SSHCompute


@pytest.fixture(params=["docker", "ssh"])
def remote(request: pytest.FixtureRequest) -> Instance:
    """An instance whose every exec goes through the helper."""
    instance: Instance = request.getfixturevalue(f"{request.param}_instance")
    return instance


def _kill(provider: ComputeProvider, instance_id: str, pid: int) -> None:
    """SIGKILL a process inside the instance from outside it (not through its helper)."""
    if isinstance(provider, DockerCompute):
        subprocess.run(["docker", "exec", container_name(instance_id), "kill", "-9", str(pid)], check=True)
    else:  # the test sshd runs on this machine
        os.kill(pid, signal.SIGKILL)


async def _helper_pid(provider: ComputeProvider, instance_id: str) -> int:
    return (await provider._channels.get(instance_id)).helper_pid


async def _outcome(call: Callable[[], Any]) -> ExecResult | ExecError:
    try:
        result: ExecResult = await call()
        return result
    except ExecError as exc:
        return exc


def _survivors(provider: ComputeProvider, instance_id: str, token: str) -> list[str]:
    """Processes in the instance whose command line holds ``token``."""
    script = (
        f"for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' <$f 2>/dev/null; echo; done | grep -F -- '{token}'"
    )
    r = _portal.call(provider.execute, instance_id, f"{script} | grep -v grep || true")
    return [line for line in r.stdout.splitlines() if line.strip()]


# ---- defect 1: at most once ------------------------------------------------------------------


@pytest.mark.parametrize("attempt", range(3))
def test_helper_killed_while_a_command_runs_does_not_run_it_twice(remote: Instance, attempt: int) -> None:
    """The issue's repro: kill -9 the helper 0.3 s into `echo run >> c; sleep 1; echo done`. On
    main the pool re-sent the exec after the end notice (wc -l printed 2, both reported exit 0)."""
    provider, iid = remote

    async def scenario() -> tuple[ExecResult | ExecError, str]:
        await provider.execute(iid, "rm -f c")
        pid = await _helper_pid(provider, iid)
        async with anyio.create_task_group() as tg:
            outcome: list[ExecResult | ExecError] = []

            async def run() -> None:
                outcome.append(
                    await _outcome(lambda: provider.execute(iid, "echo run >> c; sleep 1; echo done"))
                )

            tg.start_soon(run)
            await anyio.sleep(0.3)
            await anyio.to_thread.run_sync(_kill, provider, iid, pid)
        runs = (await provider.execute(iid, "wc -l < c")).stdout.strip()
        return outcome[0], runs

    result, runs = _portal.call(scenario)
    assert runs == "1", f"the command ran {runs} times"
    if isinstance(result, ExecError):
        assert isinstance(result, ChannelClosedError) and "may have run" in str(result), repr(result)
    else:  # recovered from the spool on a new channel: the true result
        assert result.stdout == "done\n" and result.exit_code == 0, result
    assert _portal.call(_helper_pid, provider, iid) != 0


# ---- defect 2: orphans -----------------------------------------------------------------------


def test_jobs_of_a_dead_helper_are_stopped_and_reported(remote: Instance) -> None:
    """A job still running when its helper dies has no handle left: the next helper stops it,
    and its caller is told that it may have run (not left waiting for a result nobody reads)."""
    provider, iid = remote
    token = f"sleep 37.{int(time.time() * 1000) % 1000:03d}"

    async def scenario() -> ExecResult | ExecError:
        pid = await _helper_pid(provider, iid)
        async with anyio.create_task_group() as tg:
            outcome: list[ExecResult | ExecError] = []

            async def run() -> None:
                outcome.append(await _outcome(lambda: provider.execute(iid, f"{token}; echo late > late")))

            tg.start_soon(run)
            await anyio.sleep(0.5)
            await anyio.to_thread.run_sync(_kill, provider, iid, pid)
            if isinstance(provider, SSHCompute):
                # OpenSSH withholds the helper's exit status while its job holds stderr open, so
                # the client cannot see the death through the channel: close it as a probe would.
                (await provider._channels.get(iid)).close()
            with anyio.fail_after(20):  # any request notices the dead helper and reconnects
                assert isinstance(await provider.processes.list(iid), list)
        return outcome[0]

    with anyio.from_thread.start_blocking_portal() as portal:
        result = portal.call(scenario)
    assert isinstance(result, ChannelClosedError) and "may have run" in str(result), result
    deadline = time.monotonic() + 10
    while _survivors(provider, iid, token) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _survivors(provider, iid, token), "the dead helper's job still runs"


# ---- defect 3: the spool deleted -------------------------------------------------------------


def test_deleted_spool_is_recreated(remote: Instance) -> None:
    """`rm -rf` of the spool inside the instance: on main every later exec returned exit 2 with
    empty output and start() failed with "exists". (On docker only root can: a privileged call.)"""
    provider, iid = remote
    spool = provider._spool(iid)
    with pytest.raises(ExecError, match="output may be lost"):  # its own output went with it
        _portal.call(lambda: provider.execute(iid, f"rm -rf {spool}; echo gone", privileged=True))
    r = _portal.call(provider.execute, iid, "echo out; echo err >&2; exit 3")
    assert (r.stdout, r.stderr, r.exit_code) == ("out\n", "err\n", 3), r
    info = _portal.call(provider.processes.start, iid, "echo bg")
    done = _portal.call(provider.processes.wait, iid, info.process_id, 30)
    assert done.exit_code == 0 and _portal.call(provider.processes.output, iid, info.process_id) == b"bg\n"


def test_deleted_spool_reports_the_lost_output_of_the_command_that_deleted_it(
    docker_instance: Instance,
) -> None:
    provider, iid = docker_instance
    spool = provider._spool(iid)
    kept = _portal.call(provider.execute, iid, f"rm -rf {spool}; echo after")  # not as the commands' uid
    assert kept.stdout == "after\n" and "cannot remove" in kept.stderr, kept
    with pytest.raises(ExecError, match="output may be lost"):
        _portal.call(
            lambda: provider.execute(iid, f"echo before; rm -rf {spool}; echo after", privileged=True)
        )
    assert _portal.call(provider.execute, iid, "echo fine").stdout == "fine\n"


# ---- defect 4: a full /tmp -------------------------------------------------------------------


@pytest.fixture
def small_tmp_instance(docker_ok: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[Instance]:
    """A docker instance whose /tmp, and the helper's spool in it (made without its own volume,
    ``_spec.spool_volume``, as a gVisor instance's is), is a 512 KiB tmpfs."""
    provider = DockerCompute()
    create = provider.api.create_host_config
    monkeypatch.setattr(
        provider.api,
        "create_host_config",
        lambda **kwargs: create(**kwargs | {"mounts": None}, tmpfs={"/tmp": "size=512k,mode=1777"}),
    )
    yield from provisioned(provider)


def test_full_tmp_reports_lost_output(small_tmp_instance: Instance) -> None:
    """On main a full /tmp made exec return exit 1 with empty output: an empty 'success'."""
    provider, iid = small_tmp_instance
    assert _portal.call(provider.execute, iid, "echo fits").stdout == "fits\n"
    _portal.call(_outcome, lambda: provider.execute(iid, "head -c 10M /dev/zero > /tmp/fill"))
    with pytest.raises(ExecError, match="output may be lost"):
        _portal.call(provider.execute, iid, "echo hello")
    with pytest.raises(ExecError, match="no space left"):
        _portal.call(functools.partial(provider.execute, iid, "cat", stdin=b"x" * 800_000))
    _portal.call(provider.write_file, iid, "/workspace/ok", b"")  # files elsewhere still work
    _portal.call(_outcome, lambda: provider.execute(iid, "rm -f /tmp/fill"))
    assert _portal.call(provider.execute, iid, "echo hello").stdout == "hello\n"


# ---- defect 21: write_file to a directory ------------------------------------------------------


@pytest.mark.parametrize("path", ["", ".", "/workspace", "/tmp"])
def test_write_file_to_a_directory_keeps_the_helper_and_commands_in_flight(
    remote: Instance, path: str
) -> None:
    provider, iid = remote
    if isinstance(provider, SSHCompute) and path in ("/workspace", "/tmp"):
        pytest.skip("ssh writes files over SFTP, not through the helper")

    async def scenario() -> tuple[ExecResult, BaseException | None, int, int]:
        before = await _helper_pid(provider, iid)
        async with anyio.create_task_group() as tg:
            results: list[ExecResult] = []

            async def in_flight() -> None:
                results.append(await provider.execute(iid, "sleep 0.5; echo teammate"))

            tg.start_soon(in_flight)
            await anyio.sleep(0.1)
            error: BaseException | None = None
            try:
                await provider.write_file(iid, path, b"data")
            except Exception as exc:
                error = exc
        return results[0], error, before, await _helper_pid(provider, iid)

    result, error, before, after = _portal.call(scenario)
    assert isinstance(error, (IsADirectoryError, ConfigError)), repr(error)
    assert "director" in str(error), error
    assert result.stdout == "teammate\n" and result.exit_code == 0, result
    assert before == after, "the helper died"


# ---- defect 22: reading what is not a regular file ---------------------------------------------


@pytest.mark.timeout(60)
def test_read_file_of_a_fifo_or_device_is_refused_remote(remote: Instance) -> None:
    """On main a FIFO wedged the channel (the helper blocked in head) and /dev/zero streamed
    256 MB into this process before it was refused."""
    provider, iid = remote
    _portal.call(provider.execute, iid, "rm -f fifo zero && mkfifo fifo && ln -s /dev/zero zero")
    before = _portal.call(_helper_pid, provider, iid)
    for path in ("fifo", "zero"):
        with pytest.raises(ConfigError, match="not a regular file"):
            _portal.call(provider.read_file, iid, path)
    assert _portal.call(provider.execute, iid, "echo after").stdout == "after\n"
    assert _portal.call(_helper_pid, provider, iid) == before
    _portal.call(provider.execute, iid, "rm -f fifo zero")


@pytest.mark.timeout(60)
def test_write_file_to_a_fifo_is_refused_on_docker(docker_instance: Instance) -> None:
    provider, iid = docker_instance
    _portal.call(provider.execute, iid, "rm -f wfifo && mkfifo wfifo")
    with pytest.raises(ConfigError, match="not a regular file"):
        _portal.call(provider.write_file, iid, "wfifo", b"x")
    assert _portal.call(provider.execute, iid, "echo after; rm -f wfifo").stdout == "after\n"


@pytest.fixture(params=[False, True], ids=["local", "local-bwrap"])
def local_instance(request: pytest.FixtureRequest) -> Iterator[Instance]:
    if request.param:
        request.getfixturevalue("bwrap_ok")
    yield from provisioned(LocalCompute(isolate=request.param))


@pytest.mark.timeout(60)
def test_read_file_of_a_fifo_is_refused_local(local_instance: Instance) -> None:
    """On main this hung forever (open() of a FIFO blocks until a writer comes)."""
    provider, iid = local_instance
    _portal.call(provider.execute, iid, "rm -f fifo && mkfifo fifo")
    with pytest.raises(ConfigError, match="not a regular file"):
        _portal.call(provider.read_file, iid, "fifo")
    with pytest.raises(IsADirectoryError):
        _portal.call(provider.read_file, iid, ".")
    _portal.call(provider.write_file, iid, "plain", b"kept")
    assert _portal.call(provider.read_file, iid, "plain") == b"kept"


def test_container_killed_mid_command_is_reported_not_rerun(docker_ok: None) -> None:
    """The container dies under a command: the caller is told it may have run (never a success,
    never a second run), and the next call says the instance is gone."""
    provider = DockerCompute()
    info = _portal.call(provider.provision)
    try:
        outcome: dict[str, Any] = {}

        def run() -> None:
            try:
                outcome["result"] = _portal.call(
                    lambda: provider.execute(info.instance_id, "echo ran >> /workspace/c; sleep 5", 30)
                )
            except Exception as exc:
                outcome["error"] = exc

        thread = threading.Thread(target=run)
        thread.start()
        time.sleep(0.7)
        subprocess.run(["docker", "kill", container_name(info.instance_id)], check=True, capture_output=True)
        thread.join(30)
        assert isinstance(outcome.get("error"), ChannelClosedError), outcome
        assert "may have run" in str(outcome["error"])
        with pytest.raises(InstanceNotFoundError, match=r"no longer running|no docker instance"):
            _portal.call(lambda: provider.execute(info.instance_id, "true", 10))
    finally:
        _portal.call(provider.shutdown, info.instance_id)
