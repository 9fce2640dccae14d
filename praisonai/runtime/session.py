"""Shell sessions: a persistent shell per session, like a terminal an agent types into.

cwd, exported variables and functions persist between commands. A command that goes quiet for
``idle_timeout`` seconds returns what it printed so far with ``running=True``; then ``send()``
types input into it, ``read()`` waits for more, ``interrupt()`` sends it SIGINT. ``exit 3``
reports 3 and the next command starts a fresh shell. At its hard ``timeout`` a command line is
killed whole before the call answers: its shell (which would run the rest of the line: a shell
cannot abandon a line it runs and live on) and every process the line started, ``&`` and
``setsid`` included (they carry the command's marker); the next command starts a fresh shell.
A shell that dies under a command (killed from outside) raises ``ChannelClosedError``: the
command may not have finished.

One command at a time, as in a terminal: ``run()`` calls made together (from tasks, threads or
event loops) queue first come, first served, and each gets its own command's output. A command
holds the shell until it ends, also after returning ``running=True``: a later ``run()`` waits for
it (finish it with ``read()``/``send()`` or stop it with ``interrupt()``). The wait counts against
the later call's ``timeout``; if the shell is not free by then, ``ExecError`` says the command did
not run.

The end of each command is framed with a per-session secret that only the session's frame and
its writer process in the instance hold (see session.sh), never the shell: nothing a command
prints — ``set``, ``env``, its shell's ``/proc`` files — can end its call early or leak into the
next one. Where the provider runs commands apart (docker, kubernetes), the frame and writer run
as root and only the shell as the commands' uid, not dumpable, with its requests and statuses on
sockets of a root relay: a program a command starts cannot read the secret, kill the writer,
write a status or type a request (see ``compute.separation.session``).
"""

from __future__ import annotations

import contextlib
import secrets
import signal
import threading
import time
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any

import anyio
import anyio.to_thread

from praisonai import _limits
from praisonai._errors import ChannelClosedError, ConfigError, ExecError
from praisonai._output import OutputBuffer
from praisonai._types import TIMEOUT_EXIT_CODE, SessionResult
from praisonai.runtime._turns import Turns
from praisonai.runtime._waiter import Waiter
from praisonai.runtime._wire import PendingReply, ReplyParser, quote
from praisonai.runtime.transport import Transport

#: The session's frame, which starts the shell and frames its replies (see session.sh).
SESSION_FRAME = resources.files(__package__).joinpath("session.sh").read_text()
#: The shell itself, which runs the commands (see session_shell.sh).
SESSION_SHELL = resources.files(__package__).joinpath("session_shell.sh").read_text()
_START_TIMEOUT_S = 60.0

#: Starts a session's argv in the instance. A provider whose commands run apart from what frames
#: their results appends to it an argv prefix that starts the shell apart (see session.sh).
OpenTransport = Callable[[list[str]], Transport]
#: Signals a process group inside the instance through the helper: (pgid, signal name).
SignalGroup = Callable[[int, str], Awaitable[None]]
#: Kills, through the helper and before returning, a shell's process tree and every process
#: carrying a command's marker: (shell pid, marker).
KillTree = Callable[[int, str], Awaitable[None]]


class _Run:
    """One command's progress, updated from the reader thread. ``on_end`` runs once, when it ends."""

    def __init__(self, max_output: int, on_end: Callable[[_Run], None] | None = None) -> None:
        self.max_output = max_output
        # PRAISONAI_EXEC_ID of the command's processes: 16 characters of [0-9a-z_] (see session_shell.sh)
        self.marker = "s_" + secrets.token_hex(7)
        self.out, self.err = OutputBuffer(max_output), OutputBuffer(max_output)
        self.received = 0  # bytes of output so far: progress, for the idle timeout
        self.exit_code: int | None = None
        self.shell_ending = False  # the shell exits after this command
        self.streams_done = 0  # the trailer arrives on stdout and on stderr
        self.lost = False
        self._waiter: Waiter | None = None
        self._on_end = on_end
        self._ended = False
        self._end_lock = threading.Lock()

    @property
    def complete(self) -> bool:
        return self.lost or self.streams_done == 2

    def arm(self) -> Waiter:
        self._waiter = Waiter()
        return self._waiter

    def poke(self) -> None:
        if self._waiter is not None:
            self._waiter.resolve(None)

    def stream_done(self) -> None:
        self.streams_done += 1
        self._settle()

    def lose(self) -> None:
        self.lost = True
        self._settle()

    def _settle(self) -> None:
        """Run ``on_end`` once the command is complete (called from the reader thread or the loop)."""
        with self._end_lock:
            ended, self._ended = self._ended, self._ended or self.complete
        if self._ended and not ended and self._on_end is not None:
            self._on_end(self)
        self.poke()

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
        self,
        open_transport: OpenTransport,
        signal_group: SignalGroup,
        cwd: str,
        env_file: str = "",
        *,
        kill_tree: KillTree,
    ) -> None:
        """``env_file``: shell assignments the shell reads at start when the file exists."""
        self._env_file = env_file
        self._open_transport = open_transport
        self._signal_group = signal_group
        self._kill_tree = kill_tree
        self._cwd = cwd
        self._transport: Transport | None = None
        self._shell_pid = 0
        self._secret = ""  # frames this shell's replies; see session.sh
        self._replies = 0  # replies asked of this shell so far (the hello is reply 0)
        self._run: _Run | None = None
        # The command a caller last got back running: read() continues it. Not always _run: on a
        # transport whose send returns after the reply (E2B: an HTTP round trip), a command fed
        # by send() can end, and a queued run() take the shell, before the caller calls read().
        self._held: _Run | None = None
        self._turns = Turns()
        self._stdout = ReplyParser()
        self._stderr = ReplyParser()
        self._ending = False
        self.restarts = 0  # how many times the shell was started afresh after exit or kill

    @property
    def running(self) -> bool:
        """A command is still running (it went quiet or is waiting for input)."""
        return self._run is not None and not self._run.complete

    async def run(
        self,
        command: str,
        *,
        timeout: float | None = _limits.DEFAULT_EXEC_TIMEOUT_S,
        idle_timeout: float | None = None,
        max_output: int = _limits.DEFAULT_MAX_OUTPUT_BYTES,
    ) -> SessionResult:
        """Run ``command`` in the session's shell once the commands before it have ended.

        See the module docstring for the timeouts and the queue. A rejected ``command`` or
        timeout (``ConfigError``) leaves the session as it was.
        """
        run = _Run(max_output, self._ended)
        request = _request(command, run.marker)
        timeout, idle_timeout = (
            _limits.check_timeout(timeout, allow_zero=False),
            _limits.check_timeout(idle_timeout, "idle_timeout", allow_zero=False),
        )
        if not await self._turns.take(timeout):
            raise ExecError(
                f"the session was still busy with an earlier command after {timeout:g}s;"
                " this command did not run",
                op="exec",
            )
        try:
            transport = await self._ensure_shell()
        except BaseException:
            self._turns.give_back()
            raise
        self._run = run
        self._replies += 1
        nonce = self._nonce(self._replies)
        self._stdout.expect(PendingReply(nonce, lambda st, _: self._finish(run, st), run.write_out))
        self._stderr.expect(PendingReply(nonce, lambda st, _: self._finish(run, None), run.write_err))
        try:
            await anyio.to_thread.run_sync(transport.send, request)
        except OSError as exc:
            run.lose()
            raise ChannelClosedError(
                "the session shell ended before the command reached it", op="exec", sent=False
            ) from exc
        return await self._outcome(run, timeout, idle_timeout)

    async def read(
        self, *, timeout: float | None = _limits.DEFAULT_EXEC_TIMEOUT_S, idle_timeout: float | None = None
    ) -> SessionResult:
        """Wait for more output of the command that holds the shell (or its end): the one a
        ``run()`` returned with ``running=True``."""
        timeout, idle_timeout = (
            _limits.check_timeout(timeout, allow_zero=False),
            _limits.check_timeout(idle_timeout, "idle_timeout", allow_zero=False),
        )
        run = self._held or self._run
        if run is None:
            raise ExecError("nothing has run in this session yet", op="exec")
        return await self._outcome(run, timeout, idle_timeout)

    async def send(self, text: str | bytes) -> None:
        """Type ``text`` into the running command's stdin (add the newline yourself). Text that
        arrives after the command ended reaches no command and runs as nothing."""
        if not self.running or self._transport is None:
            raise ExecError("no command is running in this session to receive input", op="exec")
        data = text.encode() if isinstance(text, str) else text
        await anyio.to_thread.run_sync(self._transport.send, data)

    async def interrupt(self, *, timeout: float = 5.0) -> SessionResult:
        """Send SIGINT to the running command (as Ctrl-C does) and return its end; the calls
        queued behind it then run in turn."""
        if not self.running or self._run is None:
            raise ExecError("no command is running in this session", op="exec")
        await self._signal("INT")
        return await self._outcome(self._run, timeout, None)

    async def close(self) -> None:
        """End the shell and whatever runs in it."""
        if self._transport is not None:
            if self.running:
                await self._signal("KILL")
            self._transport.close()
            self._transport = None

    # ---- internals -------------------------------------------------------------------------

    def _nonce(self, reply: int) -> bytes:
        return f"{self._secret}:{reply}".encode()

    async def _ensure_shell(self) -> Transport:
        if self._transport is not None and not self._ending and self._transport.alive():
            return self._transport
        if self._transport is not None:
            self._transport.close()
            self.restarts += 1
        argv = ["sh", "-c", SESSION_FRAME, "praisonai-session", SESSION_SHELL, self._cwd, self._env_file]
        transport = await anyio.to_thread.run_sync(self._open_transport, argv)
        self._secret, self._replies = secrets.token_hex(16), 0
        stdout = self._stdout = ReplyParser()
        stderr = self._stderr = ReplyParser()
        hello = _Run(1024)
        stdout.expect(PendingReply(self._nonce(0), lambda st, _: self._finish(hello, st)))
        stderr.expect(PendingReply(self._nonce(0), lambda st, _: self._finish(hello, None)))
        transport.start(stdout.feed, stderr.feed, lambda: _lost(stdout, stderr))
        self._transport = transport
        self._ending = False
        # The secret's only trip: the frame reads it before it starts the shell. If the frame is
        # already gone, the hello below says so.
        with contextlib.suppress(OSError):
            await anyio.to_thread.run_sync(transport.send, f"{self._secret}\n".encode())
        await self._collect(hello, _START_TIMEOUT_S, None)
        if hello.exit_code is None or hello.shell_ending:
            self._ending = True
            raise ChannelClosedError(f"the session shell did not start in {self._cwd}", op="session")
        self._shell_pid = hello.exit_code
        return transport

    def _finish(self, run: _Run, status: Any) -> None:
        if isinstance(status, BaseException):
            run.lose()
        elif status is not None:
            code, _, ending = str(status).partition(" ")
            run.exit_code = int(code) if code.lstrip("-").isdigit() else None
            if ending == "exit":  # the shell is exiting: the next command starts a new one
                run.shell_ending = self._ending = True
            run.stream_done()
        else:
            run.stream_done()

    def _ended(self, run: _Run) -> None:
        """``run`` has ended (from the reader thread or the loop): the next command may go."""
        if run.lost:
            self._ending = True  # the next command starts a fresh shell
        self._turns.give_back()

    async def _signal(self, name: str) -> None:
        transport = self._transport
        if transport is not None and not transport.signal_group(getattr(signal, f"SIG{name}")):
            await self._signal_group(self._shell_pid, name)

    async def _outcome(self, run: _Run, timeout: float | None, idle_timeout: float | None) -> SessionResult:
        """What the command printed and how it ended; ``ChannelClosedError`` if its shell died under it."""
        result = await self._collect(run, timeout, idle_timeout)
        if result.running:
            self._held = run
        elif self._held is run:
            self._held = None
        if run.lost and not result.timed_out:
            raise ChannelClosedError(
                "the session shell ended while the command ran, so it may not have finished;"
                " the next command starts a new shell",
                op="exec",
            )
        return result

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
        return SessionResult(
            stdout=out.text(),
            stderr=err.text(),
            exit_code=TIMEOUT_EXIT_CODE if timed_out else run.exit_code,
            running=not run.complete,
            timed_out=timed_out,
            truncated=out.truncated or err.truncated,
        )

    async def _stop(self, run: _Run) -> None:
        """The hard timeout: kill the command line's whole tree, its shell included, before the
        call answers (an interrupt would let the shell run the rest of the line, and leave what
        the line started with ``&``); the next command starts a fresh shell."""
        transport = self._transport
        try:
            if transport is None or not await anyio.to_thread.run_sync(transport.kill_all):
                await self._kill_tree(self._shell_pid, run.marker)
        finally:  # a kill that failed raises; the shell is not used again either way
            run.lose()


def _request(command: str, marker: str) -> bytes:
    """The request line that runs ``command`` with ``marker`` in its processes' env;
    ``ConfigError`` for a command no shell can take."""
    if not isinstance(command, str):
        raise ConfigError(f"a command must be a string, not {type(command).__name__}", op="exec")
    try:
        return f"\n__p_run {marker} {quote(command)}\n".encode()  # "\n": ends input a command left unread
    except UnicodeEncodeError as exc:
        raise ConfigError(
            f"the command is not valid text: {exc.reason} at character {exc.start}", op="exec"
        ) from None


def _lost(*parsers: ReplyParser) -> None:
    """The shell ended: what it still owed (to this shell's parsers only) is lost."""
    error = ChannelClosedError("the session shell ended", op="session")
    for parser in parsers:
        parser.fail(error)
