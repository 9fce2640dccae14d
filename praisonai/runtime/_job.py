"""One command run through a channel: start it, wait (streaming if asked), kill it at its
deadline, and collect its spooled output under the output cap.

At most once: a job is sent once. When its channel closes after that, the job is not sent again;
:class:`JobInterrupted` carries it to a new channel, where :meth:`Job.resume` recovers its result
from the spool (``x/<id>.p``) or, when its fate is unknown, says that it may have run.
"""

from __future__ import annotations

import contextlib
import secrets
import time
import uuid
from typing import TYPE_CHECKING, Any, Literal

import anyio

from praisonai import _limits
from praisonai._errors import ChannelClosedError, ExecError, PathNotFoundError
from praisonai._output import OutputBuffer, exec_result
from praisonai._types import ExecRequest, ExecResult, stdin_chunks
from praisonai.runtime._waiter import Waiter
from praisonai.runtime._wire import assignments

if TYPE_CHECKING:
    from praisonai.runtime.channel import Channel

#: While streaming, output is polled at this interval, backing off to the maximum when idle.
_POLL_S, _POLL_MAX_S = 0.005, 0.25
_POLL_CHUNK = 4 << 20

#: The end notice's flag for a spool too full to record the result (output may be lost too).
_SPOOL_FULL = 4
#: Chunks of a streamed stdin written ahead of what the command has taken, at most: a command that
#: reads slowly, or not at all, holds the stream back (as a pipe does) instead of filling the disk.
_STDIN_AHEAD = 8
#: A job found still running on a new channel (its helper lives on) is polled this often at most.
_ADOPT_POLL_MAX_S = 0.5


class JobInterrupted(ChannelClosedError):
    """The channel closed after the job was sent: it may have run, so it must not be sent again.
    :class:`~praisonai.runtime.pool.ChannelPool` resumes it on a new channel."""

    def __init__(self, job: Job, cause: ChannelClosedError) -> None:
        super().__init__(str(cause), op="exec", sent=True)
        self.job = job


class Job:
    """``request``'s life on one channel (its ``cwd`` a path in the instance, already resolved).
    Its spool files are listed in ``files`` for removal."""

    def __init__(self, channel: Channel, request: ExecRequest) -> None:
        if request.cwd is None:
            raise ValueError("a job's cwd is resolved to a path in the instance before it is sent")
        self._request = request
        #: A stdin that streams (fed by :meth:`feed` while the job runs), else ``None``.
        self.stream = None if request.stdin is None or isinstance(request.stdin, bytes) else request.stdin
        self.id = uuid.uuid4().hex
        # Frames the job's end (the helper's notice, and its record in the spool): the helper
        # alone knows it, so no command can end the call, or fake its result after a reconnect.
        self._secret = secrets.token_hex(16)
        self._channel = channel
        spool = f"{channel.spool}/x/{self.id}"
        self.stdin_path = spool + ".i"
        self._paths: list[tuple[Literal["stdout", "stderr"], str]] = [
            ("stdout", spool + ".o"),
            ("stderr", spool + ".e"),
        ]
        self._pid_path = spool + ".p"
        # .f: the pipe from a streamed stdin's chunks (in the directory .i) to the command; .c: a
        # command too long for an argv, read from there by its shell
        self.files = [spool + ".o", spool + ".e", self._pid_path, self.stdin_path]
        self.files += [spool + ".k", spool + ".f", spool + ".c"]
        cap = request.max_output
        self._buffers = {"stdout": OutputBuffer(cap), "stderr": OutputBuffer(cap)}
        self._sink = request.on_output
        self._offsets = {"stdout": 0, "stderr": 0}
        self._done = Waiter()
        self._cwd = request.cwd
        self._deadline: float | None = None
        self._timed_out = False

    async def start(self) -> None:
        """Send the command (its stdin, when it has one, is at ``stdin_path`` already, or is a
        stream :meth:`feed` writes into that directory); the helper's acknowledgement only matters
        when it refuses it."""

        def acknowledged(reply: tuple[str | BaseException, bytes]) -> None:
            if reply[0] != "0":  # the job never started: end the wait with the reason
                self._channel.forget_job(self.id)
                self._done.resolve(reply)

        request = self._request
        self._channel.expect_job(self.id, self._done, self._secret)
        if request.stdin is None:
            stdin = ""
        elif self.stream is None:
            stdin = self.stdin_path
        else:  # a directory (the trailing slash) for the stream's chunks
            stdin = self.stdin_path + "/"
        args = (self.id, self._cwd, stdin, self._secret, request.command, *assignments(request.env))
        try:
            # privileged: as the helper's own user, where commands have another (helper.sh)
            verb = "__p_rexec" if request.privileged else "__p_exec"
            await self._channel.send(verb, args, None, None, acknowledged)
        except BaseException:
            self._channel.forget_job(self.id)
            raise

    async def result(self) -> ExecResult:
        """Wait up to the request's timeout; past it kill the job's process tree and keep the
        partial output."""
        timeout = self._request.timeout
        self._deadline = None if timeout is None else time.monotonic() + timeout
        outcome: Any = None
        try:
            with anyio.move_on_after(timeout) as deadline:
                outcome = await self._wait()
        except ChannelClosedError:
            raise  # the job may live on: the pool resumes it on a new channel
        except BaseException:
            # The caller was cancelled (a closed stream, Ctrl-C) or its sink raised: the command
            # must not outlive the call that ran it.
            with anyio.CancelScope(shield=True):
                await self._abandon()
            raise
        if deadline.cancelled_caught:
            outcome = await self._kill()
        if outcome is not None and outcome[0] == "killed":  # its helper's sweep, not the command
            raise ChannelClosedError(
                "the exec helper ended (its input closed: its client let go, or a second client "
                "attached to the instance and let go) and stopped the command: it may have run, "
                "in part or in full; it was not run again",
                op="exec",
                sent=True,
            )
        if outcome is not None and isinstance(outcome[0], str):
            raise _refused(outcome[0], self._cwd)
        return await self._finish(outcome)

    async def feed(self) -> None:
        """Write the chunks of the job's ``stream`` as they come, once it started, then its end.
        A closed channel ends the feeding (the job's result says what became of it)."""
        assert self.stream is not None, "only a job whose stdin streams is fed"
        count = 0
        with contextlib.suppress(ChannelClosedError):
            async for chunk in stdin_chunks(self.stream):
                if count >= _STDIN_AHEAD:
                    await self._taken(count - _STDIN_AHEAD)
                await self._channel.write_file(f"{self.stdin_path}/{count}", chunk)
                count += 1
            await self._channel.write_file(f"{self.stdin_path}/end", b"")

    async def _taken(self, index: int) -> None:
        """Wait until the command has taken chunk ``index`` of its stdin (the feeder removed it)."""
        delay = _POLL_S
        while (await self._channel.request("__p_size", f"{self.stdin_path}/{index}"))[0] != "missing":
            await anyio.sleep(delay)
            delay = min(delay * 2, _POLL_MAX_S)

    async def resume(self, channel: Channel) -> ExecResult:
        """Finish the job on ``channel`` after its own channel closed, from what it left in the
        spool; raise ``ChannelClosedError`` (it may have run) when its fate cannot be known."""
        self._channel = channel
        self._done = Waiter()
        if self.stream is not None:
            # the rest of a streamed stdin cannot follow the command: its input ends here
            with contextlib.suppress(Exception):
                await channel.write_file(f"{self.stdin_path}/end", b"")
        try:
            return await self._recover(channel)
        finally:
            await channel.post("__p_rm", *self.files)

    async def _recover(self, channel: Channel) -> ExecResult:
        delay = 0.01
        while True:
            fate, _ = await channel.request("__p_fate", self.id, self._secret)
            if fate.startswith("done "):
                code, flags = fate.split()[1:]
                return await self._finish((int(code), int(flags)))
            if fate != "running":  # killed as an orphan, or its helper died with it: unknown
                raise ChannelClosedError(
                    f"the exec helper died after the command was sent, and its fate is unknown ({fate}): "
                    "it may have run, in part or in full; it was not run again",
                    op="exec",
                    sent=True,
                )
            # its helper lives on (only the channel broke): adopt the job until its deadline
            now = time.monotonic()
            if self._deadline is not None and now >= self._deadline:
                if not self._timed_out:
                    await self._kill(wait=False)
                elif now >= self._deadline + _limits.KILL_GRACE_S:
                    return await self._finish(None)  # as result() does when the kill is slow
            await anyio.sleep(delay)
            delay = min(delay * 2, _ADOPT_POLL_MAX_S)

    async def _kill(self, *, wait: bool = True) -> Any:
        """The deadline passed: kill the job's process tree and wait briefly for its end."""
        self._timed_out = True
        await self._channel.post("__p_kill", self.id, self._pid_path)
        outcome = None
        if wait:
            with anyio.move_on_after(_limits.KILL_GRACE_S):
                outcome = await self._wait()
            self._channel.forget_job(self.id)
        return outcome

    async def _abandon(self) -> None:
        """Nobody waits for the job any more: kill its process tree and wait briefly for its end
        (the end notice comes once the tree is gone), so the caller returns after the kill."""
        await self._channel.post("__p_kill", self.id, self._pid_path)
        with anyio.move_on_after(_limits.KILL_GRACE_S), contextlib.suppress(Exception):
            await self._channel.wait_for(self._done, "exec", probe=False)
        self._channel.forget_job(self.id)

    async def _finish(self, outcome: Any) -> ExecResult:
        flags = None if outcome is None else outcome[1]
        await self._collect(flags)
        out, err = self._buffers["stdout"], self._buffers["stderr"]
        if flags is not None and flags & _SPOOL_FULL:
            raise ExecError(
                f"the command's output may be lost (exit code {outcome[0]}): the instance's "
                f"spool {self._channel.spool} is full or was deleted while the command ran",
                op="exec",
            )
        return exec_result(None if outcome is None else outcome[0], out, err, timed_out=self._timed_out)

    async def _wait(self) -> Any:
        if self._sink is None:
            return await self._channel.wait_for(self._done, "exec", probe=False)
        delay = _POLL_S
        while True:
            moved = await self._poll()
            delay = _POLL_S if moved else min(delay * 2, _POLL_MAX_S)
            with anyio.move_on_after(delay):
                return await self._channel.wait_for(self._done, "exec", probe=False)

    async def _collect(self, flags: int | None) -> None:
        """Fetch what the job spooled: the rest of a stream, or the non-empty streams."""
        if self._sink is not None:
            while await self._poll():
                pass
            return
        for bit, (name, path) in zip((1, 2), self._paths, strict=True):
            if flags is None or flags & bit:
                await self._channel.fetch(path, self._buffers[name])

    async def _poll(self) -> int:
        """Move new output of both streams to the buffers and the sink; return the bytes moved."""
        assert self._sink is not None
        moved = 0
        for name, path in self._paths:
            offset = str(self._offsets[name])
            status, data = await self._channel.request("__p_read", path, offset, str(_POLL_CHUNK))
            if status == "0" and data:
                self._offsets[name] += len(data)
                self._buffers[name].write(data)
                self._sink(name, data)
                moved += len(data)
        return moved


def _refused(status: str, cwd: str) -> Exception:
    if status == "nocwd":
        return PathNotFoundError(f"working directory {cwd} does not exist", op="exec")
    if status == "nospool":
        return ExecError(
            "the exec helper could not create its spool files in the instance (its /tmp is full, "
            "read-only or not writable); the command did not run",
            op="exec",
        )
    if status == "nostdin":
        return ExecError(
            "the exec helper could not make the pipe for the command's streamed stdin (mkfifo "
            "failed: the instance's /tmp is full, or it is at its process limit); the command did not run",
            op="exec",
        )
    if status == "nofork":
        return ExecError(
            "the instance is at its process limit (a command forks without end?); the command did "
            "not run: end what runs there, e.g. kill a background process",
            op="exec",
        )
    return ExecError(f"the exec helper refused the command ({status})", op="exec")
