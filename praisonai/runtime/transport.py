"""Byte pipes to a helper process: its stdin, and its stdout/stderr pushed from a reader thread.

A transport is loop-agnostic on purpose: its reader is a daemon thread, so one channel serves
every event loop (the Sandbox portal's and the caller's own). Providers supply transports —
local pipes here, bubblewrap, the docker exec socket and an SSH channel in their providers.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import subprocess
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence

from praisonai.runtime import owner

#: Receives output chunks from the reader thread.
Receiver = Callable[[bytes], None]


class Transport(ABC):
    """One running helper process. ``send`` blocks (call it from a worker thread)."""

    def start(self, on_stdout: Receiver, on_stderr: Receiver, on_closed: Callable[[], None]) -> None:
        """Start the reader thread; ``on_closed`` runs once when the process's output ends."""

        def pump() -> None:
            try:
                self._pump(on_stdout, on_stderr)
            finally:
                on_closed()

        threading.Thread(target=pump, name=f"praisonai-{type(self).__name__}", daemon=True).start()

    @abstractmethod
    def _pump(self, on_stdout: Receiver, on_stderr: Receiver) -> None:
        """Read until the output ends or the transport is closed."""

    @abstractmethod
    def send(self, data: bytes) -> None:
        """Write to the process's stdin; raises ``OSError`` when it is gone."""

    def send_nowait(self, data: bytes) -> int:
        """Write what fits without blocking and return how much that was (0: try ``send``)."""
        return 0

    def signal_group(self, signum: int) -> bool:
        """Signal the process's group from here if this side can (False: ask the helper)."""
        return False

    def kill_all(self) -> bool:
        """Kill the process and everything it started from here, if this side sees all of it
        (a sandbox of its own), and return once they are gone; False: ask the helper. Blocking."""
        return False

    @abstractmethod
    def alive(self) -> bool:
        """Ask out of band whether the process still runs (its pipes may outlive it)."""

    @abstractmethod
    def exit_code(self) -> int | None:
        """The process's exit status once it has ended, else ``None``."""

    @abstractmethod
    def close(self) -> None:
        """Stop the process's pipes (idempotent); the reader thread then ends."""


class ProcessTransport(Transport):
    """A local child process in its own session, talking over pipes. With ``die_with_owner`` it
    is started by this process's keeper, and everything it starts dies if this process dies (see
    ``runtime.owner``)."""

    def __init__(
        self, argv: Sequence[str], *, env: Mapping[str, str], cwd: str, die_with_owner: bool = False
    ) -> None:
        self.process: subprocess.Popen[bytes] | owner.KeptProcess
        if die_with_owner:
            self.process = _kept(argv, env=env, cwd=cwd)
        else:
            self.process = subprocess.Popen(
                list(argv),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=dict(env),
                cwd=cwd,
                bufsize=0,
                start_new_session=True,
            )
        self._lock = threading.Lock()

    def _pump(self, on_stdout: Receiver, on_stderr: Receiver) -> None:
        assert self.process.stdout is not None and self.process.stderr is not None
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ, on_stdout)
            selector.register(self.process.stderr, selectors.EVENT_READ, on_stderr)
            while selector.get_map():
                for key, _ in selector.select():
                    try:
                        data = os.read(key.fd, 1 << 16)
                    except OSError:
                        data = b""
                    if data:
                        key.data(data)
                    else:
                        selector.unregister(key.fileobj)
                        key.fileobj.close()  # type: ignore[union-attr]
        self.process.wait()

    def send(self, data: bytes) -> None:
        assert self.process.stdin is not None
        view = memoryview(data)
        with self._lock:
            try:
                while view:  # a raw pipe write may be partial
                    view = view[self.process.stdin.write(view) or 0 :]
            except ValueError as exc:  # close() ran: the pipe is as gone as a broken one
                raise BrokenPipeError("the helper's stdin is closed") from exc

    def signal_group(self, signum: int) -> bool:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signum)
        return True

    def alive(self) -> bool:
        return self.process.poll() is None

    def exit_code(self) -> int | None:
        return self.process.poll()

    def close(self) -> None:
        # EOF on stdin ends the helper; jobs still running keep its stderr open until they end.
        stdin = self.process.stdin
        if stdin is not None and not stdin.closed:
            with contextlib.suppress(OSError):
                stdin.close()


def _kept(argv: Sequence[str], *, env: Mapping[str, str], cwd: str) -> owner.KeptProcess:
    """``argv`` started by the keeper, its pipes' client ends unbuffered as Popen gives them."""
    pipes = [os.pipe() for _ in range(3)]
    mine = [pipes[0][1], pipes[1][0], pipes[2][0]]
    try:
        process = owner.spawn(argv, cwd=cwd, env=env, stdio=(pipes[0][0], pipes[1][1], pipes[2][1]))
    except BaseException:
        for fd in mine:
            os.close(fd)
        raise
    finally:
        for fd in (pipes[0][0], pipes[1][1], pipes[2][1]):
            os.close(fd)
    process.stdin = open(mine[0], "wb", buffering=0)  # noqa: SIM115 -- closed by the transport
    process.stdout = open(mine[1], "rb", buffering=0)  # noqa: SIM115
    process.stderr = open(mine[2], "rb", buffering=0)  # noqa: SIM115
    return process
