"""A long-lived Modal exec as a channel transport: stdin bytes in, stdout/stderr bytes out.

Modal's exec is already a bidirectional stream: ``sb.exec(*argv, text=False)`` returns a process
whose stdin is written by unary calls (``write`` + ``drain``: one ``TaskExecStdinWrite`` each) and
whose stdout/stderr are long server streams (``TaskExecStdioRead``). The transport is blocking and
loop-agnostic, as every transport is:

- ``send`` uses the SDK's blocking API (synchronicity runs it on the SDK's own loop) from the
  caller's worker thread, never from an event loop (that would warn, and block the loop);
- the reader thread runs a private event loop that pumps both streams with the SDK's ``.aio``
  form and waits for the exit status (one held ``TaskExecWait``), so ``alive`` and ``exit_code``
  cost no vendor call;
- ``close`` never waits: it stops the reader (its reads are cancelled) and sends EOF from a daemon
  thread. A process that ends with channels open sends their EOF at exit: Modal ends no exec when
  its client goes, so a helper left running would keep its sandbox active until its ``timeout``.

When the process has exited but its streams stay open (jobs it started still hold its stderr,
which a worker may keep streaming), the reader ends after ``_EXIT_GRACE_S``, so a dead helper is
seen as one.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import threading
from collections.abc import Sequence
from typing import Any

from praisonai._errors import InstanceNotFoundError
from praisonai.compute.providers.modal import _sdk
from praisonai.compute.providers.modal._sdk import translated
from praisonai.runtime.transport import Receiver, Transport

#: A write larger than this is sent in pieces (Modal's stdin buffer refuses more than 16 MiB).
_CHUNK = 4 << 20
#: After the process exits, how long its streams may still deliver output.
_EXIT_GRACE_S = 2.0
#: A helper no client has sent a request for this long, with no command of its own running, is
#: ended by its guard (``guarded``). Far past the linger (at most 30 s) a live client closes by.
ORPHAN_HELPER_S = 600
#: Watches the helper it ``exec``s (same pid, ``$$``): ends it once no request reached the
#: sandbox's helpers (SPOOL/alive, touched per request) for $1 seconds and none of its own jobs
#: (SPOOL/x/*.p naming it, without a "done" line) runs. Holds none of the exec's pipes. ``-nt`` is
#: not POSIX, but dash, bash and busybox sh have it.
_GUARD = r"""g=$1 s=$2
shift 2
(
  m=$s/.guard.$$
  true >"$m"
  while sleep "$g"; do
    [ -d "/proc/$$" ] || break
    if [ "$s/alive" -nt "$m" ]; then true >"$m"; continue; fi
    for f in "$s"/x/*.p; do
      [ -f "$f" ] || continue
      o= d=
      { read -r c o n; read -r d r; } <"$f"
      [ "$o" = "$$" ] && [ "$d" != done ] && continue 2
    done
    kill "$$"
    break
  done
  rm -f "$m"
) </dev/null >/dev/null 2>&1 &
exec "$@"
"""
#: Transports whose EOF is not sent yet (sent at exit; see the module docstring).
_OPEN: set[ModalExecTransport] = set()
_at_exit: list[bool] = []


def guarded(argv: Sequence[str], spool: str) -> list[str]:
    """``argv`` (the helper) under its guard: a client killed outright sends no EOF, and Modal
    ends no exec when its client goes, so the helper would keep its sandbox active until the
    sandbox's timeout."""
    return ["sh", "-c", _GUARD, "praisonai-guard", str(ORPHAN_HELPER_S), spool, *argv]


def start(sb: Any, argv: Sequence[str], instance_id: str) -> ModalExecTransport:
    """Start ``argv`` in the sandbox ``sb`` (blocking: call it from a worker thread)."""
    with translated("exec", instance_id):
        try:
            process = sb.exec(*argv, text=False)
        except _sdk.load().exception.ConflictError as exc:  # "Sandbox already finished"
            raise InstanceNotFoundError(
                f"the Modal sandbox of {instance_id!r} has finished", op="exec"
            ) from exc
    if not _at_exit:  # registered after modal's own exit hook, so it runs first (LIFO)
        _at_exit.append(True)
        atexit.register(_end_all)
    transport = ModalExecTransport(process)
    _OPEN.add(transport)
    return transport


def _end_all() -> None:
    for transport in list(_OPEN):
        transport._send_eof(wait_s=1.0)


class ModalExecTransport(Transport):
    """One process started by ``sb.exec``; see the module docstring."""

    def __init__(self, process: Any) -> None:
        self._process = process
        self._send_lock = threading.Lock()  # write + drain share one buffer in the SDK
        self._closed = False
        self._ended = False
        self._code: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None

    def _pump(self, on_stdout: Receiver, on_stderr: Receiver) -> None:
        try:
            asyncio.run(self._read(on_stdout, on_stderr))
        finally:
            self._ended = True
            if self._code is not None:
                _OPEN.discard(self)  # it has exited: no EOF due

    async def _read(self, on_stdout: Receiver, on_stderr: Receiver) -> None:
        self._stop = stop = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        if self._closed:  # closed before the reader started
            return
        both: asyncio.Future[Any] = asyncio.gather(
            self._drain(self._process.stdout, on_stdout),
            self._drain(self._process.stderr, on_stderr),
            return_exceptions=True,
        )
        exited: asyncio.Future[Any] = asyncio.ensure_future(self._wait_exit())
        stopped: asyncio.Future[Any] = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait([stopped, exited, both], return_when=asyncio.FIRST_COMPLETED)
            if exited.done() and not stopped.done() and not both.done():
                await asyncio.wait(
                    [stopped, both], timeout=_EXIT_GRACE_S, return_when=asyncio.FIRST_COMPLETED
                )
        finally:
            for future in (both, exited, stopped):
                future.cancel()
            await asyncio.gather(both, exited, stopped, return_exceptions=True)

    @staticmethod
    async def _drain(stream: Any, receive: Receiver) -> None:
        with contextlib.suppress(Exception):  # a vanished sandbox or exec ends the stream
            async for chunk in stream:
                if chunk:
                    receive(bytes(chunk))

    async def _wait_exit(self) -> None:
        try:
            self._code = int(await self._process.wait.aio())
        except Exception:  # the sandbox or the exec is gone: so is the process
            self._code = -1

    def send(self, data: bytes) -> None:
        with self._send_lock:
            if self._closed or self._ended:
                raise OSError("the Modal exec's stdin is closed")
            try:
                for start in range(0, len(data), _CHUNK):
                    self._process.stdin.write(data[start : start + _CHUNK])
                    self._process.stdin.drain()
            except Exception as exc:  # the SDK's errors: the process or the sandbox is gone
                raise OSError(f"writing to the Modal exec failed: {exc}") from exc

    def alive(self) -> bool:
        return not self._ended and self._code is None

    def exit_code(self) -> int | None:
        return self._code

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None:
            with contextlib.suppress(RuntimeError):  # the reader's loop has ended already
                loop.call_soon_threadsafe(stop.set)
        threading.Thread(target=self._send_eof, name="praisonai-modal-eof", daemon=True).start()

    def _send_eof(self, wait_s: float = -1) -> None:
        """EOF ends the helper (its jobs live on); a gone process needs none."""
        if not self._send_lock.acquire(timeout=wait_s):
            return  # a send is stuck: at exit, not worth waiting for
        try:
            with contextlib.suppress(Exception):
                self._process.stdin.write_eof()
                self._process.stdin.drain()
            _OPEN.discard(self)
        finally:
            self._send_lock.release()
