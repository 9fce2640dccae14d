"""The persistent exec channel: one helper shell per instance, many requests in flight.

The helper (``helper.sh``, POSIX sh) reads one request line at a time and answers on stdout in
request order; commands run in detached jobs whose output is spooled inside the instance, and
whose end is announced on stderr. So a command costs a fork and an exec inside the instance
instead of a new ``docker exec`` (about 50 ms), and any number run at once.

At most once: a request is sent once. ``ChannelClosedError.sent`` is False only when the request
provably never reached the helper (the channel was closed before it was written), or when it
only reads; the pool repeats those, and nothing else, on a new channel. An exec whose job was sent
is never sent again: its result is recovered from the spool by job id on the new channel, or the
caller learns that it may have run (see ``_job``).

Waiting works from any event loop: the transport's reader thread resolves asyncio futures with
``call_soon_threadsafe``. Results cross the thread boundary as values, never as exceptions, so an
abandoned wait cannot log "exception never retrieved".
"""

from __future__ import annotations

import collections
import contextlib
import hmac
import threading
from collections.abc import Callable, Mapping
from importlib import resources
from typing import Any, Literal

import anyio
import anyio.to_thread

from praisonai._errors import ChannelClosedError, ExecError
from praisonai._output import OutputBuffer
from praisonai._retry import backoff
from praisonai._tasks import beside
from praisonai._transfer import moved
from praisonai._types import ExecRequest, ExecResult, ProcessInfo
from praisonai.runtime import processes
from praisonai.runtime._files import fetch_spooled, file_error, unkilled
from praisonai.runtime._job import Job, JobInterrupted
from praisonai.runtime._waiter import Waiter
from praisonai.runtime._wire import (
    LineSplitter,
    PendingReply,
    ReplyParser,
    request_line,
)
from praisonai.runtime._wire import new_nonce as new_nonce  # also a started helper's (docker's main channel)
from praisonai.runtime.partial import partial_name
from praisonai.runtime.transport import Transport

#: The helper script: its file requests (and who runs what), then its core; both POSIX sh.
HELPER = "\n".join(
    resources.files(__package__).joinpath(n).read_text() for n in ("helper_files.sh", "helper.sh")
)
#: Spooled files of this many finished commands are removed in one batch.
_TRASH_BATCH = 64
#: A request's payload (a file written) goes out in steps of this, each counted as moved.
_PAYLOAD_STEP = 1 << 20
#: A reply slower than this makes the channel ask the provider whether the helper still runs.
_PROBE_AFTER_S = 0.25
#: A read refused for the process limit is asked this often in all (up to about 45 s of backoff).
_NOFORK_ATTEMPTS = 10
#: Requests that only read: repeating one on a new channel cannot do anything twice.
_READ_ONLY = frozenset({"__p_read", "__p_fread", "__p_size", "__p_tail", "__p_ps", "__p_ping", "__p_fate"})

OpenTransport = Callable[[list[str]], Transport]


def helper_argv(spool: str, nonce: str, user: str | None = None) -> list[str]:
    """The command that starts the helper (the script travels as ``sh -c`` text, never a file).
    ``user``: ``"UID:GID"``, which the user's commands and file requests run as, apart from the
    helper (see helper.sh); ``None``: they share the helper's. With ``user`` the nonce is not in
    the argv, which every uid may read (``/proc/PID/cmdline``): ``Channel.open`` sends it first
    on the helper's stdin, as docker's main channel does."""
    if user:
        return ["sh", "-c", HELPER, "praisonai-helper", spool, "-", "attached", user]
    return ["sh", "-c", HELPER, "praisonai-helper", spool, nonce]


class Channel:
    """A live helper in one instance. Open it with :meth:`open`; it is closed for good once its
    transport ends — providers then open a new one."""

    def __init__(self, transport: Transport, spool: str, ended: str | None = None) -> None:
        self.transport = transport
        self.spool = spool
        self._ended = None if ended is None else ended.encode()
        self.helper_pid = 0
        self._replies = ReplyParser()
        self._jobs: dict[str, tuple[Waiter, str]] = {}  # job id: its end's waiter and secret
        self._closed: ChannelClosedError | None = None
        self._closing = False  # close() was called; the reader may not have seen the end yet
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=20)
        self._trash: list[str] = []
        self._send_lock = threading.Lock()  # held by worker threads: replies come in write order

    # ---- opening and closing ---------------------------------------------------------------

    @classmethod
    async def open(
        cls,
        open_transport: OpenTransport,
        spool: str,
        *,
        nonce: str | None = None,
        ended: str | None = None,
        user: str | None = None,
    ) -> Channel:
        """Start a helper through ``open_transport(argv)`` and wait for its hello. ``nonce``: the
        helper's, when it was started already (with it) and ``open_transport`` only connects.
        ``ended``: the line on its stderr that says the helper ended, where its output outlives it
        (docker's main channel); it holds a secret, as commands can write that stderr too.
        ``user``: as ``helper_argv``'s."""
        nonce = nonce or new_nonce()
        transport = await anyio.to_thread.run_sync(open_transport, helper_argv(spool, nonce, user))
        if user:
            transport.send(f": {nonce}\n".encode())
        channel = cls(transport, spool, ended)
        hello = Waiter()
        channel._replies.expect(PendingReply(nonce.encode(), lambda status, body: hello.resolve(status)))
        transport.start(channel._replies.feed, LineSplitter(channel._on_event).feed, channel._on_closed)
        try:
            status = await channel.wait_for(hello, "start")
        except ChannelClosedError as exc:  # no request was sent on it yet
            why = f"the exec helper did not start: {channel._why()}"
            raise ChannelClosedError(why, op="exec", sent=False) from exc
        except BaseException:  # cancelled (a start deadline): the half-started helper goes too
            channel.close()
            raise
        if not isinstance(status, str) or not status.isdigit():
            channel.close()
            raise ChannelClosedError(f"the exec helper did not start: {channel._why()}", op="exec")
        channel.helper_pid = int(status)
        return channel

    @property
    def is_open(self) -> bool:
        # Closing is seen at once, not only when the reader thread reaches the end of the stream:
        # a caller that retries right after a close must get a new channel, not this one.
        return self._closed is None and not self._closing

    def close(self) -> None:
        self._closing = True
        self.transport.close()

    def _on_closed(self) -> None:
        message = (
            "the exec channel into the instance closed (the helper was killed or the instance "
            "stopped){}; the next call opens a new channel"
        )
        # Requests written but not answered may have run: they are not sent again (reads are,
        # by request()). Requests not yet written fail in _check_open, and may be.
        self._closed = ChannelClosedError(message.format(""), op="exec", sent=False)
        self._replies.fail(ChannelClosedError(message.format(" before it answered"), op="exec", sent=True))
        jobs, self._jobs = self._jobs, {}
        lost = ChannelClosedError(message.format(" while the command ran"), op="exec", sent=True)
        for waiter, _ in jobs.values():
            waiter.resolve(lost)

    def _on_event(self, line: str) -> None:
        words = line.split(" ")
        if words[0] == "D":
            self._on_job_end(words[1:])
        elif self._ended is not None and hmac.compare_digest(line.encode(), self._ended):
            self.close()  # the helper is gone: requests not yet sent fail as not sent
        elif line:
            self._stderr_tail.append(line)  # the helper's own complaints, kept for error messages

    def _on_job_end(self, words: list[str]) -> None:
        """``<id> <code> <flags> <secret>``: the job ended, if the secret is the job's own.

        Commands can write to the helper's stderr too (``/proc/<pid>/fd/2``): a line without the
        secret, or not of this shape, is not the helper's and is dropped without a trace (a
        forged line must neither end a call nor reach an error message)."""
        if len(words) != 4:
            return
        job_id, code, flags, secret = words
        expected = self._jobs.get(job_id)
        if expected is None or not hmac.compare_digest(secret.encode(), expected[1].encode()):
            return
        if not flags.isdigit() or not (code.isdigit() or code.isalpha()):
            return
        del self._jobs[job_id]
        # a word for a code: the job could not start (see _refused)
        expected[0].resolve((int(code), int(flags)) if code.isdigit() else (code, b""))

    def expect_job(self, job_id: str, waiter: Waiter, secret: str) -> None:
        """Route the job's end notice to ``waiter`` (register before sending the job): only a
        notice that carries ``secret``, the job's own."""
        self._jobs[job_id] = (waiter, secret)

    def forget_job(self, job_id: str) -> None:
        self._jobs.pop(job_id, None)

    def _why(self) -> str:
        return "; ".join(self._stderr_tail) or "no output"

    # ---- requests --------------------------------------------------------------------------

    async def request(
        self,
        function: str,
        *args: str,
        payload: bytes | None = None,
        sink: Callable[[bytes], None] | None = None,
    ) -> tuple[str, bytes]:
        """Send one request and return the helper's (status, body). A request that only reads and
        found the instance at its process limit ("nofork": a fork bomb the watchdog is about to
        kill) is asked again, with backoff, up to ``_NOFORK_ATTEMPTS`` times."""
        for attempt in range(_NOFORK_ATTEMPTS):
            waiter = Waiter()
            await self.send(function, args, payload, sink, waiter.resolve)
            try:
                status, body = await self.wait_for(waiter, function)
            except ChannelClosedError as exc:
                if exc.sent and function in _READ_ONLY:  # harmless to repeat
                    raise ChannelClosedError(str(exc), op="exec", sent=False) from exc
                raise
            if status != "nofork" or function not in _READ_ONLY:
                break
            await anyio.sleep(backoff(attempt))
        return status, body

    async def post(self, function: str, *args: str) -> None:
        """Send a request whose reply nobody waits for; a closed channel is not an error here."""
        with contextlib.suppress(ChannelClosedError):
            await self.send(function, args, None, None, lambda value: None)

    async def send(
        self,
        function: str,
        args: tuple[str, ...],
        payload: bytes | None,
        sink: Callable[[bytes], None] | None,
        resolve: Callable[[Any], None],
    ) -> None:
        nonce = new_nonce()
        line = request_line(function, nonce, *args)
        reply = PendingReply(nonce.encode(), lambda status, body: resolve((status, body)), sink)
        # Fast path: a short request goes out from the event loop when the socket takes it at
        # once (a worker-thread hop costs more than the whole write).
        if not payload and len(line) <= 4096 and self._send_lock.acquire(blocking=False):
            try:
                self._check_open()
                self._replies.expect(reply)
                try:
                    sent = self.transport.send_nowait(line)
                    if 0 < sent < len(line):
                        self.transport.send(line[sent:])  # rare: finish the line, it is short
                except OSError:
                    sent = len(line)  # the reader sees the end too and fails the reply
                if not sent:
                    self._replies.retract(reply)
            finally:
                self._send_lock.release()
            if sent:
                return
        await anyio.to_thread.run_sync(self._write, line, reply, payload)

    def _write(self, line: bytes, reply: PendingReply, payload: bytes | None) -> None:
        with self._send_lock:  # the reply order is the write order
            self._check_open()
            self._replies.expect(reply)
            try:
                self.transport.send(line)
                data = payload or b""
                for at in range(0, len(data), _PAYLOAD_STEP):  # in steps: a transfer's progress
                    step = data[at : at + _PAYLOAD_STEP]
                    self.transport.send(step)
                    moved(len(step))
            except OSError:
                pass  # the reader sees the end too and fails the reply; don't race it here

    def _check_open(self) -> None:
        if self._closed is not None:
            raise ChannelClosedError(str(self._closed), op="exec", sent=False)
        if self._closing:  # closed here, before the reader saw the end: nothing more goes out
            raise ChannelClosedError(
                "the exec channel was closed; the next call opens a new one", op="exec", sent=False
            )

    async def wait_for(self, waiter: Waiter, what: str, *, probe: bool = True) -> Any:
        """Wait for a value from the reader thread.

        A reply is due within milliseconds, so a silent helper is probed: its pipes can outlive
        it while jobs it started still run. Jobs report by themselves and are not probed.
        """
        delay = _PROBE_AFTER_S if probe else None
        while True:
            with anyio.move_on_after(delay):
                value = await waiter.wait()
                if isinstance(value, tuple) and isinstance(value[0], BaseException):
                    raise value[0]
                if isinstance(value, BaseException):
                    raise value
                return value
            if not await anyio.to_thread.run_sync(self.transport.alive):
                self.close()
                raise ChannelClosedError(
                    f"the exec helper died before answering {what!r}", op="exec", sent=True
                )
            delay = 1.0

    # ---- exec ------------------------------------------------------------------------------

    async def exec(self, request: ExecRequest) -> ExecResult:
        """Run ``request.command`` under ``sh -c`` with the exec contract (see ComputeProvider);
        ``request.cwd`` is a path in the instance, resolved by the caller.

        At most once: ``ChannelClosedError`` with ``sent=False`` means the command was not sent;
        once sent, a closed channel raises :class:`JobInterrupted` for the pool to resume the job
        on a new channel (never to send it again)."""
        job = Job(self, request)
        if isinstance(request.stdin, bytes):
            try:
                await self.write_file(job.stdin_path, request.stdin)
            except ChannelClosedError as exc:  # the command itself was not sent
                raise ChannelClosedError(str(exc), op="exec", sent=False) from exc
        await job.start()
        interrupted = False
        try:
            if job.stream is None:
                return await job.result()
            return await beside(job.result, job.feed)  # once the command ended, no more is read
        except ChannelClosedError as exc:
            interrupted = True  # its spool files stay for the recovery
            raise JobInterrupted(job, exc) from exc
        finally:
            if not interrupted:
                await self._discard(*job.files)

    async def fetch(self, path: str, buffer: OutputBuffer) -> None:
        """Copy a spooled stream into ``buffer``, moving only its head and tail when it is long."""
        await fetch_spooled(self.request, path, buffer)

    async def _discard(self, *paths: str) -> None:
        self._trash.extend(paths)
        if len(self._trash) >= _TRASH_BATCH:
            batch, self._trash = self._trash, []
            await self.post("__p_rm", *batch)

    # ---- files -----------------------------------------------------------------------------

    async def read_file(
        self, path: str, offset: int = 0, limit: int | None = None, *, user: bool = False
    ) -> bytes:
        """The file's bytes; ``user``: read as the commands' uid (a user's file), else as the
        helper's (the spool)."""
        args = [path, str(offset)] + ([str(limit)] if limit is not None else [])
        status, body = await unkilled(self.request, "__p_fread" if user else "__p_read", *args)
        if status != "0":
            raise file_error(status, path, "read_file")
        return body

    async def write_file(self, path: str, data: bytes, *, user: bool = False) -> None:
        """Replace the file with ``data``; ``user``: as ``read_file``'s."""

        async def write(verb: str, *args: str, payload: bytes | None = None) -> tuple[str, bytes]:
            # a new file of a fresh name each try: a killed try's may not have been removed
            return await self.request(verb, *args, partial_name(), payload=payload)

        verb = "__p_fwrite" if user else "__p_write"
        status, _ = await unkilled(write, verb, path, str(len(data)), payload=data)
        if status == "short":  # the helper's input ended: it is ending, so no later call is sent to it
            self.close()
        if status != "0":
            raise file_error(status, path, "write_file")

    async def bind_env(self, assignments_text: bytes) -> None:
        """Add ``NAME='value'`` lines to the environment of every later command, background process
        and session in the instance (kept in the spool, which only the helper's user can read, and
        the commands' uid where it differs: every command has these in its environment anyway)."""
        # appended, then sourced in order: a later binding wins name by name
        status, _ = await self.request("__p_env", str(len(assignments_text)), payload=assignments_text)
        if status != "0":
            raise ExecError(f"the helper could not load the bound env: {status}", op="bind_env")

    # ---- background processes ----------------------------------------------------------------

    async def start(self, command: str, *, cwd: str, env: Mapping[str, str]) -> ProcessInfo:
        info, args = processes.start_request(command, cwd, env)
        status, _ = await self.request("__p_start", *args)
        processes.check_started(status, cwd, self.spool)
        return info

    async def processes(self, process_id: str | None = None) -> list[ProcessInfo]:
        _, body = await self.request("__p_ps", *([process_id] if process_id else []))
        return processes.parse_listing(body)

    def process_file(self, process_id: str, name: Literal["out", "err", "pid"]) -> str:
        return processes.process_file(self.spool, process_id, name)

    async def kill_process(self, process_id: str) -> None:
        await self.request("__p_kill", *processes.kill_args(self.spool, process_id))
