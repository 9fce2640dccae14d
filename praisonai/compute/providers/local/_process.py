"""Run one host process under the exec contract: capped output, streaming, a tree-killing timeout."""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import time
from collections.abc import Callable, Sequence
from typing import Literal

import anyio
from anyio.abc import ByteSendStream

from praisonai._limits import KILL_GRACE_S
from praisonai._output import OutputBuffer, exec_result
from praisonai._types import ExecRequest, ExecResult, OutputSink, Stdin, stdin_chunks
from praisonai.compute.providers.local._pipes import PipeReceiveStream, PipeSendStream
from praisonai.runtime import owner

#: The environment variable every process of a local or SSH instance carries: ``<name>=<instance id>``.
INSTANCE_MARKER = "PRAISONAI_INSTANCE"
# Sweeps of /proc back to back while processes of the instance keep appearing (a fork races each
# sweep); then a pause between sweeps, for the killed ones to die.
_SWEEPS = 20


async def run_process(
    argv: Sequence[str],
    request: ExecRequest,
    *,
    on_start: Callable[[int], None] = lambda pid: None,
    on_end: Callable[[int], None] = lambda pid: None,
) -> ExecResult:
    """Run ``argv`` (which runs ``request.command``) in a new session, in ``request.cwd`` (a host
    directory) with exactly ``request.env``; at ``request.timeout`` kill its whole process group.
    It is started by this process's keeper (``runtime.owner``): if this process dies, everything
    the command started dies too, however detached.

    ``on_start``/``on_end`` receive the process-group id, so a caller can record what runs (a
    shutdown from another process kills those groups). stdin is ``request.stdin``, streamed as it
    comes, or ``/dev/null`` when it is ``None``.
    """
    out, err = OutputBuffer(request.max_output), OutputBuffer(request.max_output)
    process = _Command(argv, request)  # through the keeper: all it starts dies with this process
    on_start(process.pid)
    timed_out = False
    try:
        assert process.stdout is not None and process.stderr is not None
        async with anyio.create_task_group() as readers:
            pumps = [
                _Pump(process.stdout, out, "stdout", request.on_output),
                _Pump(process.stderr, err, "stderr", request.on_output),
            ]
            for pump in pumps:
                readers.start_soon(pump.run)
            if process.stdin is not None:
                readers.start_soon(_feed, process.stdin, request.stdin or b"")
            # Done means: the process exited and what it wrote was read. A child it left running
            # in the background (`sleep 60 &`) may hold its output open for as long as it lives:
            # what is in the pipes when the shell ends is read, not what comes after, as docker's
            # helper reads its spool when the shell ends.
            with anyio.move_on_after(request.timeout) as deadline:
                await process.wait()
                for pump in pumps:
                    await pump.drain()
            if deadline.cancelled_caught:
                timed_out = True
                kill_group(process.pid)
                # Children that left the group may still hold the pipes: bound the wait.
                with anyio.move_on_after(KILL_GRACE_S):
                    for pump in pumps:
                        await pump.done.wait()
            readers.cancel_scope.cancel()
    finally:
        await _reap(process)
        on_end(process.pid)
    return exec_result(exit_status(process.returncode), out, err, timed_out=timed_out)


class _Pump:
    """Copies one pipe into its buffer (and the caller's sink) until end-of-file."""

    def __init__(
        self,
        stream: PipeReceiveStream,
        buffer: OutputBuffer,
        name: Literal["stdout", "stderr"],
        sink: OutputSink | None,
    ) -> None:
        self.stream, self.buffer, self.name, self.sink = stream, buffer, name, sink
        self.done = anyio.Event()
        self._received = 0
        self._moved = anyio.Event()  # set by each chunk read (and the end), then made anew

    async def run(self) -> None:
        try:
            async for chunk in self.stream:
                self.buffer.write(chunk)
                if self.sink is not None:
                    self.sink(self.name, chunk)
                self._received += len(chunk)
                self._moved.set()
                self._moved = anyio.Event()
        finally:
            self.done.set()
            self._moved.set()

    async def drain(self) -> None:
        """Return once the pipe ended, or everything it held when called was read."""
        target = self._received + self.stream.pending()
        while not self.done.is_set() and self._received < target:
            await self._moved.wait()


async def _feed(stdin: ByteSendStream, data: Stdin) -> None:
    """Write the command's stdin as it comes, then close it; a command that stops reading is fine."""
    try:
        async for chunk in stdin_chunks(data):
            await stdin.send(chunk)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        pass
    finally:
        await stdin.aclose()


def kill_group(pgid: int) -> None:
    """SIGKILL a whole process group; a group that is already gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def kill_marked(instance_id: str) -> int:
    """SIGKILL every process on this machine whose environment carries ``INSTANCE_MARKER`` for
    ``instance_id`` (also those that left its process groups with ``setsid``), sweeping again
    while forks race the sweep. Returns how many were killed. Blocking: ~1 ms per 100 processes."""
    return kill_carrying(f"{INSTANCE_MARKER}={instance_id}".encode())


def kill_carrying(entry: bytes) -> int:
    """SIGKILL every process of this machine whose environment holds ``entry`` (``NAME=value``),
    sweeping again while forks race the sweep, and return once none is left (a killed process
    lingers until the kernel runs it, which on a loaded machine takes a while), or after
    ``KILL_GRACE_S``; how many were killed."""
    killed: set[int] = set()
    deadline = time.monotonic() + KILL_GRACE_S
    for sweep in itertools.count():
        found = [pid for pid in _pids() if pid != os.getpid() and _carries(pid, entry)]
        if not found or time.monotonic() > deadline:
            break
        for pid in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
        if sweep >= _SWEEPS:  # no new fork for a while: those left are dying, not forking
            time.sleep(0.01)
    return len(killed)


def _pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _carries(pid: int, entry: bytes) -> bool:
    """Whether process ``pid``'s environment holds exactly ``entry`` (``NAME=value``)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return entry in f.read().split(b"\0")
    except OSError:  # gone meanwhile, or another user's process
        return False


class _Command:
    """A kept command as the exec contract uses it: its pid, its pipes as anyio streams, its end."""

    def __init__(self, argv: Sequence[str], request: ExecRequest) -> None:
        stdin_r, stdin_w = os.pipe() if request.stdin is not None else (os.open(os.devnull, os.O_RDONLY), -1)
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        try:
            stdio = (stdin_r, out_w, err_w)
            self.kept = owner.spawn(argv, cwd=str(request.cwd), env=request.env, stdio=stdio)
        except BaseException:
            for fd in (stdin_w, out_r, err_r):
                if fd >= 0:
                    os.close(fd)
            raise
        finally:
            for fd in (stdin_r, out_w, err_w):
                os.close(fd)
        self.pid = self.kept.pid
        self.stdin = PipeSendStream(stdin_w) if stdin_w >= 0 else None
        self.stdout, self.stderr = PipeReceiveStream(out_r), PipeReceiveStream(err_r)

    @property
    def returncode(self) -> int | None:
        return self.kept.poll()

    async def wait(self) -> int:
        while (code := self.kept.poll()) is None:
            await anyio.wait_readable(self.kept.status_fd)
        return code

    async def aclose(self) -> None:
        for stream in (self.stdin, self.stdout, self.stderr):
            if stream is not None:
                await stream.aclose()


async def _reap(process: _Command) -> None:
    """Never leave a child behind: kill the group if it still runs, then collect the status."""
    if process.returncode is None:
        kill_group(process.pid)
    with anyio.CancelScope(shield=True):
        await process.wait()
        await process.aclose()


def exit_status(returncode: int | None) -> int:
    """Shell convention: a process killed by signal N exits 128+N."""
    if returncode is None:
        return -1
    return 128 - returncode if returncode < 0 else returncode
