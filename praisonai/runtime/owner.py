"""Owner death for processes started on this machine: everything they start dies with the process
that started them.

A command started by a client that is then SIGKILLed would run on, unobserved, after everyone was
told its call was interrupted — and so would whatever it left behind. So each client process keeps
one keeper process (``_keeper.py``, started on first use in a session of its own) that starts the
client's commands for it: the client hands it the command and its pipes over a socket only the
client holds (:func:`spawn`). The keeper is a child subreaper, so every process those commands
start stays below it however it detaches (``setsid``, a double fork, ``nohup``, a new process
group, a cleared environment); when the socket closes — the client died, however — the keeper
kills them all.

Why this and not the alternatives: ``PR_SET_PDEATHSIG`` covers one process, not what it starts,
and fires when the spawning *thread* ends; killing process groups misses ``setsid``; a marker in
the environment misses ``env -i``; a cgroup would hold everything but needs a delegated cgroup
tree, which a user's shell rarely has. Descent cannot be shed: a process can leave its group,
session and environment, never its ancestors. What is not covered: processes started by asking
another service (``systemd-run``, ``at``, an ssh to this host), which are not descendants.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

from praisonai._limits import KEEPER_EXIT_S

_SCRIPT = Path(__file__).with_name("_keeper.py")
_HEADER = struct.Struct(">I")


class Keeper:
    """One keeper process and the client's end of its socket."""

    def __init__(self) -> None:
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            # its own session: a Ctrl-C meant for the client's terminal does not reach it
            self.process = subprocess.Popen(
                [sys.executable or "python3", "-I", "-S", str(_SCRIPT)],
                stdin=theirs.fileno(),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                env={"PATH": "/usr/bin:/bin"},
                cwd="/",  # holds no directory of the client's busy
            )
        finally:
            theirs.close()
        self.socket = mine

    def alive(self) -> bool:
        return self.process.poll() is None

    def retire(self) -> None:
        """Let go of a keeper that died (killed: it was replaced): its socket, and its status."""
        self.socket.close()
        self.process.poll()

    def send(self, request: bytes, fds: Sequence[int]) -> None:
        """One request with its descriptors (raises ``OSError`` when the keeper is gone)."""
        data = _HEADER.pack(len(request)) + request
        sent = socket.send_fds(self.socket, [data], list(fds), socket.MSG_NOSIGNAL)
        self.socket.sendall(data[sent:], socket.MSG_NOSIGNAL)


_lock = threading.Lock()
_keeper: Keeper | None = None


class KeptProcess:
    """A command the keeper started, seen as :class:`subprocess.Popen` sees its child: ``pid``,
    ``returncode`` (negative: killed by that signal), ``poll``, ``wait`` and ``kill``; ``stdin``,
    ``stdout`` and ``stderr`` are the client's ends of its pipes, where it asked for them."""

    stdin: IO[bytes] | None
    stdout: IO[bytes] | None
    stderr: IO[bytes] | None

    def __init__(self, pid: int, status: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self.stdin = self.stdout = self.stderr = None
        self._status = status
        self._seen = b""
        self._lock = threading.Lock()
        os.set_blocking(status, False)
        weakref.finalize(self, os.close, status)

    @property
    def status_fd(self) -> int:
        """Readable when the process may have ended (then call :meth:`poll`)."""
        return self._status

    def poll(self) -> int | None:
        with self._lock:
            if self.returncode is None:
                self._read_status()
            return self.returncode

    def _read_status(self) -> None:
        try:
            data = os.read(self._status, 64)
        except BlockingIOError:
            return
        self._seen += data
        if b"\n" in self._seen:  # "exit <wait status>"
            self.returncode = os.waitstatus_to_exitcode(int(self._seen.split()[1]))
        elif not data:  # the keeper died without telling: make "ended" true, once all of it is
            _kill_group(self.pid)
            self.returncode = -signal.SIGKILL

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            # poll, not select: a process holding many files has descriptors past select's 1024
            ready = select.poll()
            ready.register(self._status, select.POLLIN)
            if not ready.poll(None if left is None else left * 1000) and left is not None:
                raise subprocess.TimeoutExpired([str(self.pid)], timeout or 0.0)
        return code

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(self.pid, signal.SIGKILL)


def _kill_group(pgid: int) -> None:
    """SIGKILL the process group and return once none of it runs (zombies aside), or after
    ``KEEPER_EXIT_S``: the caller answers "killed" next, and nothing of it may run past that."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    deadline = time.monotonic() + KEEPER_EXIT_S
    while _group_runs(pgid) and time.monotonic() < deadline:
        time.sleep(0.005)


def _group_runs(pgid: int) -> bool:
    """Whether a process of group ``pgid`` is still alive on this machine (from /proc/*/stat)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            state, _, group = stat.read_text().rsplit(")", 1)[1].split()[:3]
            if state != "Z" and int(group) == pgid:
                return True
    return False


def start() -> None:
    """Start this process's keeper now if it does not run, so that the first command does not
    wait for it (the local provider calls it when it creates an instance)."""
    with _lock:
        _running()


def spawn(
    argv: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str],
    stdio: tuple[int, int, int],
    tty: bool = False,
) -> KeptProcess:
    """Start ``argv`` in a new session through this process's keeper, with ``stdio`` (descriptors
    of this process, which the caller still closes) as its stdin, stdout and stderr; ``tty``
    makes its stdin (a pty) its controlling terminal. Everything it starts dies when this process
    dies. Raises the ``OSError`` of an exec that failed (``FileNotFoundError``…)."""
    request = json.dumps({"argv": list(argv), "cwd": cwd, "env": dict(env), "tty": tty}).encode()
    status_r, status_w = os.pipe()
    try:
        with _lock:
            _send(request, (*stdio, status_w))
        os.close(status_w)
        status_w = -1
        first = _first_line(status_r)
    except BaseException:
        os.close(status_r)
        raise
    finally:
        if status_w >= 0:
            os.close(status_w)
    word, _, value = first.partition(" ")
    if word != "pid":
        os.close(status_r)
        if word != "error":
            raise OSError("the owner keeper ended before it started the command")
        code, _, name = value.partition(" ")  # FileNotFoundError … naming the program or the cwd
        raise OSError(int(code), os.strerror(int(code)), json.loads(name or "null"))
    return KeptProcess(int(value), status_r)


def _send(request: bytes, fds: Sequence[int]) -> None:
    """To the keeper (started, or replaced when it was killed); under ``_lock``."""
    for attempt in range(2):
        keeper = _running()
        try:
            keeper.send(request, fds)
            return
        except (BrokenPipeError, ConnectionResetError):  # it died: the request never reached it
            with contextlib.suppress(subprocess.TimeoutExpired):
                keeper.process.wait(KEEPER_EXIT_S)  # so that _running sees it dead and replaces it
            if attempt:
                raise


def _running() -> Keeper:
    """This process's keeper, started (or replaced when it died); under ``_lock``."""
    global _keeper
    if _keeper is not None and not _keeper.alive():
        _keeper.retire()
        _keeper = None
    if _keeper is None:
        _keeper = Keeper()
    return _keeper


def _first_line(status: int) -> str:
    """The first line the keeper wrote on a status pipe ("" when it ended first), read a byte at
    a time: the exit line may follow at once, and is :class:`KeptProcess`'s to read."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = os.read(status, 1)
        if not chunk:
            break
        data += chunk
    return data.decode().strip()


def forget_keeper() -> None:
    """After ``fork()`` in a child: the parent's keeper is not this process's, and the child must
    not hold its socket open (the keeper would not see the parent die)."""
    global _keeper
    if _keeper is not None:
        with contextlib.suppress(OSError):
            _keeper.socket.close()
    _keeper = None


def _exiting() -> None:
    """At a normal exit, end the keeper as the exit would (the socket closes: what it started
    dies), and reap it, rather than leave a running child to the garbage collector."""
    keeper = _keeper
    if keeper is None:
        return
    keeper.socket.close()
    with contextlib.suppress(subprocess.TimeoutExpired):
        keeper.process.wait(KEEPER_EXIT_S)


with contextlib.suppress(AttributeError):  # no fork on this platform
    os.register_at_fork(after_in_child=forget_keeper)
atexit.register(_exiting)
