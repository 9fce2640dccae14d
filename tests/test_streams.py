"""Sandbox.stream / AsyncSandbox.stream: closing or breaking out kills the command, the backlog is
bounded without losing output silently, the result comes last, and the sync face has no thread per call."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator
from typing import Literal

import anyio
import pytest

from praisonai import AsyncSandbox, ExecResult, PathNotFoundError, Sandbox, SandboxClosedError
from praisonai._types import OutputChunk
from praisonai.sandbox._stream import BACKLOG_BYTES, Backlog, ExecStream


@pytest.fixture(scope="module", params=["local", "docker", "ssh"])
def sb(request: pytest.FixtureRequest) -> Iterator[Sandbox]:
    compute: object = request.param
    if request.param == "docker":
        request.getfixturevalue("docker_ok")
    if request.param == "ssh":
        from praisonai.compute.providers.ssh import SSHCompute

        compute = SSHCompute(**request.getfixturevalue("sshd").connect_kwargs())
    with Sandbox.create(compute) as sandbox:
        yield sandbox


async def _borrow(sb: Sandbox) -> AsyncSandbox:
    """The same instance through a provider of this event loop's own."""
    return await AsyncSandbox.connect(sb.id, type(sb.provider).from_options(sb.provider.options))


def _sleeper() -> tuple[str, str]:
    """A ``sleep`` whose argument is unique to this test (local instances share the host's ps)."""
    seconds = f"30.{random.randrange(10**8):08d}"
    return seconds, f"echo started; sleep {seconds} & sleep {seconds}; wait"


def _running(sb: Sandbox, seconds: str) -> int:
    ps = sb.exec("ps -eo args").stdout
    return sum(1 for line in ps.splitlines() if line.strip() == f"sleep {seconds}")


def _gone_within(sb: Sandbox, seconds: str, limit: float = 5.0) -> bool:
    end = time.monotonic() + limit
    while _running(sb, seconds):
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True


def test_output_then_the_result(sb: Sandbox) -> None:
    items = list(sb.stream("for i in 1 2 3; do echo $i; sleep 0.05; done; echo oops >&2; exit 3"))
    chunks, result = items[:-1], items[-1]
    assert all(isinstance(c, OutputChunk) for c in chunks)
    assert b"".join(c.data for c in chunks if c.stream == "stdout") == b"1\n2\n3\n"
    assert b"".join(c.data for c in chunks if c.stream == "stderr") == b"oops\n"
    assert isinstance(result, ExecResult)
    assert (result.stdout, result.stderr, result.exit_code) == ("1\n2\n3\n", "oops\n", 3)


def test_a_timeout_still_ends_with_the_result(sb: Sandbox) -> None:
    *_, result = sb.stream("echo a; sleep 5", timeout=0.5)
    assert isinstance(result, ExecResult) and result.timed_out and result.stdout == "a\n"


def test_errors_are_raised_by_the_iteration(sb: Sandbox) -> None:
    with pytest.raises(PathNotFoundError):
        list(sb.stream("true", cwd="no/such/dir"))


def test_breaking_out_kills_the_command_tree(sb: Sandbox) -> None:
    seconds, command = _sleeper()
    for item in sb.stream(command):
        assert isinstance(item, OutputChunk) and item.data == b"started\n"
        assert _running(sb, seconds) == 2
        break  # the generator is dropped here, and closed: no gc needed
    assert _gone_within(sb, seconds)


def test_closing_the_generator_kills_the_command(sb: Sandbox) -> None:
    seconds, command = _sleeper()
    items = sb.stream(command)
    assert next(items) == OutputChunk("stdout", b"started\n")
    items.close()  # returns once the command is killed
    assert _gone_within(sb, seconds, limit=2.0)


def test_async_break_and_aclose_kill_the_command(sb: Sandbox) -> None:
    async def main() -> None:
        asb = await _borrow(sb)
        seconds, command = _sleeper()
        async for item in asb.stream(command):
            assert item == OutputChunk("stdout", b"started\n")
            break  # the dropped stream is cancelled: no aclose() needed
        assert await anyio.to_thread.run_sync(_gone_within, sb, seconds)

        seconds, command = _sleeper()
        async with asb.stream(command) as items:
            assert await items.__anext__() == OutputChunk("stdout", b"started\n")
        assert await anyio.to_thread.run_sync(_gone_within, sb, seconds, 2.0)
        await asb.close()  # borrowed: lets go only

    anyio.run(main)


def test_a_slow_consumer_gets_bounded_memory_and_accounted_output(sb: Sandbox) -> None:
    total = 12 * BACKLOG_BYTES

    async def main() -> tuple[list[OutputChunk], ExecResult, ExecStream]:
        asb = await _borrow(sb)
        stream = asb.stream(f"head -c {total} /dev/zero | tr '\\0' x; echo done >&2")
        chunks: list[OutputChunk] = []
        async for item in stream:
            if isinstance(item, ExecResult):
                return chunks, item, stream
            chunks.append(item)
            if len(chunks) == 1:
                await anyio.sleep(2)  # the command prints everything meanwhile
        raise AssertionError("no result")

    chunks, result, stream = anyio.run(main)
    out = [c for c in chunks if c.stream == "stdout"]
    skipped = sum(c.skipped for c in out)
    assert skipped > 0  # the consumer fell behind and was told so
    assert sum(len(c.data) for c in out) + skipped == total  # nothing lost silently
    assert all(set(c.data) <= {ord("x")} for c in out)
    err = [c for c in chunks if c.stream == "stderr"]  # older than later stdout: may be dropped too
    assert sum(len(c.data) + c.skipped for c in err) == 5
    assert b"done\n".endswith(b"".join(c.data for c in err))
    backlog = stream.backlog
    assert backlog is not None and backlog.peak <= max(BACKLOG_BYTES, backlog.biggest)
    assert backlog.biggest <= 4 << 20  # the channel reads at most 4 MiB per poll, local 64 KiB
    assert result.exit_code == 0 and result.truncated and result.stderr == "done\n"
    assert len(result.stdout) < 2 * BACKLOG_BYTES  # the exec's own cap: head and tail


def test_a_fast_consumer_gets_every_byte(sb: Sandbox) -> None:
    *chunks, result = sb.stream("seq 1 100000")  # 0.6 MB: less than the backlog
    expected = "".join(f"{i}\n" for i in range(1, 100001)).encode()
    assert b"".join(c.data for c in chunks if isinstance(c, OutputChunk)) == expected
    assert all(isinstance(c, OutputChunk) and c.skipped == 0 for c in chunks)
    assert isinstance(result, ExecResult) and result.exit_code == 0 and not result.truncated


def test_no_thread_per_sync_stream(sb: Sandbox) -> None:
    list(sb.stream("echo warm"))
    before = threading.active_count()
    for i in range(20):
        items = sb.stream(f"echo {i}; sleep 0.01")
        assert next(items) == OutputChunk("stdout", f"{i}\n".encode())
        if i % 2:
            items.close()
        else:
            assert isinstance(list(items)[-1], ExecResult)
    assert not [t for t in threading.enumerate() if t.name == "praisonai-stream"]
    end = time.monotonic() + 5  # transient helpers (a child watcher per local process) end by themselves
    while threading.active_count() > before and time.monotonic() < end:
        time.sleep(0.05)
    assert threading.active_count() <= before


def test_a_closed_sandbox_refuses_to_stream() -> None:
    sb = Sandbox.create("local")
    sb.close()
    with pytest.raises(SandboxClosedError):
        sb.stream("true")


def test_backlog_drops_the_oldest_bytes_and_counts_them_per_stream() -> None:
    backlog = Backlog(10)
    backlog.put("stdout", b"abcdef")
    backlog.put("stderr", b"12")
    backlog.put("stdout", b"ghijkl")  # 14 bytes: the 4 oldest (stdout) go
    assert backlog.size == 10 and backlog.peak == 10
    assert backlog.take() == OutputChunk("stdout", b"ef", skipped=4)
    assert backlog.take() == OutputChunk("stderr", b"12")
    backlog.put("stdout", b"mn")
    backlog.put("stderr", b"0123456789AB")  # bigger than the limit: everything older goes, not it
    assert backlog.size == 12 and backlog.peak == 12 and backlog.biggest == 12
    assert backlog.take() == OutputChunk("stderr", b"0123456789AB")
    assert backlog.take() is None
    assert backlog.take_skip() == OutputChunk("stdout", b"", skipped=8)  # its end was dropped
    assert backlog.take_skip() is None


def test_a_stream_never_iterated_runs_nothing(sb: Sandbox) -> None:
    path = f"/tmp/never-{random.randrange(10**8)}"
    sb.stream(f"touch {path}")
    assert sb.exec(f"test -e {path}").exit_code == 1


def test_output_from_a_worker_thread_and_close_from_another_task() -> None:
    async def run(sink: Callable[[Literal["stdout", "stderr"], bytes], None]) -> ExecResult:
        await anyio.to_thread.run_sync(sink, "stdout", b"from a thread")
        await anyio.sleep(30)
        raise AssertionError("not cancelled")

    async def main() -> None:
        stream = ExecStream(run)
        assert await stream.__anext__() == OutputChunk("stdout", b"from a thread")
        ended: list[bool] = []

        async def wait_for_more() -> None:
            with pytest.raises(StopAsyncIteration):
                await stream.__anext__()
            ended.append(True)

        async with anyio.create_task_group() as tg:
            tg.start_soon(wait_for_more)  # waits until the close ends the iteration
            await anyio.sleep(0.05)
            with anyio.fail_after(2):
                await stream.aclose()
        assert ended
        with pytest.raises(StopAsyncIteration):
            await stream.__anext__()

    anyio.run(main)
