"""Shell sessions: a persistent shell per session, like a terminal an agent types into.

cwd, exported variables and functions persist between commands. A command that goes quiet for
``idle_timeout`` seconds returns what it printed so far with ``running=True``; then ``send()``
types input into it, ``read()`` waits for more, ``interrupt()`` sends it SIGINT. ``exit 3``
reports 3 and the next command starts a fresh shell; so does a command that ignored SIGINT at
its hard timeout (it is killed with its shell).
"""

from __future__ import annotations

import signal
import time
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any

import anyio
import anyio.to_thread

from praisonai import _limits
from praisonai._errors import ChannelClosedError, ExecError
from praisonai._types import TIMEOUT_EXIT_CODE, SessionResult
from praisonai.channel._waiter import Waiter
from praisonai.channel._wire import PendingReply, ReplyParser, new_nonce, request_line
from praisonai.channel.transport import Transport
from praisonai._output import OutputBuffer

SESSION_SHELL = resources.files(__package__).joinpath("session.sh").read_text()
_INTERRUPT_GRACE_S = 1.0

OpenTransport = Callable[[list[str]], Transport]
#: Signals a process group inside the instance through the helper: (pgid, signal name).
SignalGroup = Callable[[int, str], Awaitable[None]]


class _Run:
    """One command's progress, updated from the reader thread."""

    def __init__(self, max_output: int) -> None:
        self.max_output = max_output
        self.out, self.err = OutputBuffer(max_output), OutputBuffer(max_output)
        self.received = 0  # bytes of output so far: progress, for the idle timeout
        self.exit_code: int | None = None
        self.streams_done = 0  # the trailer arrives on stdout and on stderr
        self.lost = False
        self._waiter: Waiter | None = None

    @property
    def complete(self) -> bool:
        return self.lost or self.streams_done == 2

    def arm(self) -> Waiter:
        self._waiter = Waiter()
        return self._waiter

    def poke(self) -> None:
        if self._waiter is not None:
            self._waiter.resolve(None)

    def write_out(self, data: bytes) -> None:
        self.out.write(data)
        self.received += len(data)

    def write_err(self, data: bytes) -> None:
        self.err.write(data)
        self.received += len(data)

    def take(self) -> tuple[OutputBuffer, OutputBuffer]:
        """The output since the last take; later output goes to fresh buffers."""
        taken = self.out, self.err
        self.out, self.err = OutputBuffer(self.max_output), OutputBuffer(self.max_output)
        return taken


class ShellSession:
    """A persistent shell in one instance. Open through ``Sandbox.session()``."""

    def __init__(
        self, open_transport: OpenTransport, signal_group: SignalGroup, cwd: str, env_file: str = ""
    ) -> None:
        """``env_file``: shell assignments the shell reads at start when the file exists."""
        self._env_file = env_file
        self._open_transport = open_transport
        self._signal_group = signal_group
        self._cwd = cwd
        self._transport: Transport | None = None
        self._shell_pid = 0
        self._run: _Run | None = None
        self._stdout = ReplyParser()
        self._stderr = ReplyParser()
        self._ending = False
        self.restarts = 0  # how many times the shell was started afresh after exit or kill

    @property
    def running(self) -> bool:
        """A command is still running (it went quiet or is waiting for input)."""
        return self._run is not None and not self._run.complete

    async def run(
        self, command: str, *, timeout: float | None = _limits.DEFAULT_EXEC_TIMEOUT_S,
        idle_timeout: float | None = None, max_output: int = _limits.DEFAULT_MAX_OUTPUT_BYTES,
    ) -> SessionResult:  # fmt: skip
        """Run ``command`` in the session's shell; see the module docstring for the timeouts."""
        if self.running:
            raise ExecError("a command is still running in this session: read(), send() or interrupt() it", op="exec")
        transport = await self._ensure_shell()
        run = self._run = _Run(max_output)
        nonce = new_nonce()
        self._stdout.expect(PendingReply(nonce.encode(), lambda st, _: self._finish(run, st), run.write_out))
        self._stderr.expect(PendingReply(nonce.encode(), lambda st, _: self._finish(run, None), run.write_err))
        await anyio.to_thread.run_sync(transport.send, request_line("__p_run", nonce, command))
        return await self._collect(run, timeout, idle_timeout)

    async def read(self, *, timeout: float | None = _limits.DEFAULT_EXEC_TIMEOUT_S,
                   idle_timeout: float | None = None) -> SessionResult:  # fmt: skip
        """Wait for more output of the running command (or its end)."""
        if self._run is None:
            raise ExecError("nothing has run in this session yet", op="exec")
        return await self._collect(self._run, timeout, idle_timeout)

    async def send(self, text: str | bytes) -> None:
        """Type ``text`` into the running command's stdin (add the newline yourself)."""
        if not self.running or self._transport is None:
            raise ExecError("no command is running in this session to receive input", op="exec")
        data = text.encode() if isinstance(text, str) else text
        await anyio.to_thread.run_sync(self._transport.send, data)

    async def interrupt(self, *, timeout: float = 5.0) -> SessionResult:
        """Send SIGINT to the running command (as Ctrl-C does) and return its end."""
        if not self.running or self._run is None:
            raise ExecError("no command is running in this session", op="exec")
        await self._signal("INT")
        return await self._collect(self._run, timeout, None)

    async def close(self) -> None:
        """End the shell and whatever runs in it."""
        if self._transport is not None:
            if self.running:
                await self._signal("KILL")
            self._transport.close()
            self._transport = None

    # ---- internals -------------------------------------------------------------------------

    async def _ensure_shell(self) -> Transport:
        if self._transport is not None and not self._ending and self._transport.alive():
            return self._transport
        if self._transport is not None:
            self._transport.close()
            self.restarts += 1
        nonce = new_nonce()
        argv = ["sh", "-c", SESSION_SHELL, "praisonai-session", self._cwd, nonce, self._env_file]
        transport = await anyio.to_thread.run_sync(self._open_transport, argv)
        stdout = self._stdout = ReplyParser()
        stderr = self._stderr = ReplyParser()
        hello = _Run(1024)
        stdout.expect(PendingReply(nonce.encode(), lambda st, _: self._finish(hello, st)))
        stderr.expect(PendingReply(nonce.encode(), lambda st, _: self._finish(hello, None)))
        transport.start(stdout.feed, stderr.feed, lambda: _lost(stdout, stderr))
        self._transport = transport
        self._ending = False
        await self._collect(hello, 60, None)
        if hello.exit_code is None:
            raise ChannelClosedError(f"the session shell did not start in {self._cwd}", op="session")
        self._shell_pid = hello.exit_code
        return transport

    def _finish(self, run: _Run, status: Any) -> None:
        if isinstance(status, BaseException):
            run.lost = True
        elif status is not None:
            code, _, ending = str(status).partition(" ")
            run.exit_code = int(code) if code.lstrip("-").isdigit() else None
            run.streams_done += 1
            if ending == "exit":  # the shell is exiting: the next command starts a new one
                self._ending = True
        else:
            run.streams_done += 1
        run.poke()

    async def _signal(self, name: str) -> None:
        transport = self._transport
        if transport is not None and not transport.signal_group(getattr(signal, f"SIG{name}")):
            await self._signal_group(self._shell_pid, name)

    async def _collect(self, run: _Run, timeout: float | None, idle_timeout: float | None) -> SessionResult:
        start = last = time.monotonic()
        seen = run.received
        timed_out = False
        while not run.complete:
            waiter = run.arm()
            if run.complete:
                break
            now = time.monotonic()
            limits = [t for t in (timeout and start + timeout, idle_timeout and last + idle_timeout) if t]
            with anyio.move_on_after(min(limits) - now if limits else None):
                await waiter.wait()
            now = time.monotonic()
            if run.received != seen:
                seen, last = run.received, now
            if timeout is not None and now >= start + timeout and not run.complete:
                timed_out = True
                await self._stop(run)
                break
            if idle_timeout is not None and now >= last + idle_timeout and not run.complete:
                break
        out, err = run.take()
        if run.lost and self._transport is not None:
            self._transport.close()  # the next run starts a fresh shell
        return SessionResult(
            stdout=out.text(),
            stderr=err.text(),
            exit_code=TIMEOUT_EXIT_CODE if timed_out else run.exit_code,
            running=not run.complete,
            timed_out=timed_out,
            truncated=out.truncated or err.truncated,
        )

    async def _stop(self, run: _Run) -> None:
        """Interrupt; a command that ignores it is killed with the shell."""
        await self._signal("INT")
        with anyio.move_on_after(_INTERRUPT_GRACE_S):
            while not run.complete:
                await run.arm().wait()
        if not run.complete:
            await self._signal("KILL")
            run.lost = True


def _lost(*parsers: ReplyParser) -> None:
    """The shell ended: what it still owed (to this shell's parsers only) is lost."""
    error = ChannelClosedError("the session shell ended", op="session")
    for parser in parsers:
        parser.fail(error)
