"""One command run through a channel: start it, wait (streaming if asked), kill it at its
deadline, and collect its spooled output under the output cap."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

import anyio

from praisonai import _limits
from praisonai._errors import ExecError, PathNotFoundError
from praisonai._types import TIMEOUT_EXIT_CODE, ExecResult
from praisonai.channel._waiter import Waiter
from praisonai.channel._wire import assignments
from praisonai._output import OutputBuffer

if TYPE_CHECKING:
    from praisonai.channel.channel import Channel

#: While streaming, output is polled at this interval, backing off to the maximum when idle.
_POLL_S, _POLL_MAX_S = 0.005, 0.25
_POLL_CHUNK = 4 << 20

Sink = Callable[[Literal["stdout", "stderr"], bytes], None]


class Job:
    """A command's life on one channel. Its spool files are listed in ``files`` for removal."""

    def __init__(self, channel: Channel, max_output: int, on_output: Sink | None) -> None:
        self.id = uuid.uuid4().hex
        self._channel = channel
        spool = f"{channel.spool}/x/{self.id}"
        self.stdin_path = spool + ".i"
        self._paths: list[tuple[Literal["stdout", "stderr"], str]] = [
            ("stdout", spool + ".o"),
            ("stderr", spool + ".e"),
        ]
        self._pid_path = spool + ".p"
        self.files = [spool + ".o", spool + ".e", self._pid_path, self.stdin_path]
        self._buffers = {"stdout": OutputBuffer(max_output), "stderr": OutputBuffer(max_output)}
        self._sink = on_output
        self._offsets = {"stdout": 0, "stderr": 0}
        self._done = Waiter()
        self._cwd = ""

    async def start(self, command: str, cwd: str, env: Mapping[str, str], *, with_stdin: bool) -> None:
        """Send the command; the helper's acknowledgement only matters when it refuses it."""

        def acknowledged(reply: tuple[str | BaseException, bytes]) -> None:
            if reply[0] != "0":  # the job never started: end the wait with the reason
                self._channel.forget_job(self.id)
                self._done.resolve(reply)

        self._cwd = cwd
        self._channel.expect_job(self.id, self._done)
        args = (self.id, cwd, self.stdin_path if with_stdin else "", command, *assignments(env))
        try:
            await self._channel.send("__p_exec", args, None, None, acknowledged)
        except BaseException:
            self._channel.forget_job(self.id)
            raise

    async def result(self, timeout: float | None) -> ExecResult:
        """Wait up to ``timeout``; past it kill the job's process tree and keep partial output."""
        outcome: Any = None
        with anyio.move_on_after(timeout) as deadline:
            outcome = await self._wait()
        timed_out = deadline.cancelled_caught
        if timed_out:
            await self._channel.post("__p_kill", self.id, self._pid_path)
            with anyio.move_on_after(_limits.KILL_GRACE_S):
                outcome = await self._wait()
            self._channel.forget_job(self.id)
        if outcome is not None and isinstance(outcome[0], str):
            raise _refused(outcome[0], self._cwd)
        await self._collect(None if outcome is None else outcome[1])
        out, err = self._buffers["stdout"], self._buffers["stderr"]
        return ExecResult(
            stdout=out.text(),
            stderr=err.text(),
            exit_code=TIMEOUT_EXIT_CODE if timed_out else outcome[0],
            timed_out=timed_out,
            truncated=out.truncated or err.truncated,
        )

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
        for bit, (name, path) in zip((1, 2), self._paths):
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
    return ExecError(f"the exec helper refused the command ({status})", op="exec")
