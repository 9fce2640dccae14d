"""The owner keeper, run as a script (``python3 -I -S _keeper.py``) by ``runtime.owner``: it starts
a client's commands and kills every process they started when the client dies.

Its stdin is a unix socket only the client holds. Each request is a 4-byte length and a JSON
object ``{"argv", "env", "cwd", "tty"}`` carrying four descriptors: the command's stdin, stdout and
stderr, and a status pipe on which the keeper writes ``pid <pid>`` (or ``error <errno> <name>``) once the
command runs, and ``exit <wait status>`` when it ends.

The keeper is a child subreaper (``PR_SET_CHILD_SUBREAPER``): whatever a command leaves behind
when its parent ends — ``setsid``, a double fork, ``nohup``, a group of its own, its environment
cleared — becomes the keeper's child rather than init's, so the keeper always knows every process
the client's commands started, and reaps them. When the socket reaches end-of-file (the client
died, however, or closed it at exit) the keeper SIGKILLs all its descendants until none is left,
then exits. Standard library only: it starts in a few milliseconds, once per client.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import json
import os
import selectors
import signal
import socket
import struct
import subprocess
import sys
import termios
import time
from typing import Any

_PR_SET_CHILD_SUBREAPER = 36
_HEADER = struct.Struct(">I")
_FDS_PER_REQUEST = 4


def main() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        sys.exit(f"praisonai keeper: cannot become a subreaper: {os.strerror(ctypes.get_errno())}")
    # Only the client's death (or SIGKILL) ends it. Caught, not ignored: a caught signal is
    # back to its default in the commands it execs, an ignored one would stay ignored there.
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(signum, lambda *_: None)
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    client = socket.socket(fileno=0)
    statuses: dict[int, int] = {}  # a command's pid -> its status pipe
    try:
        _serve_until_closed(client, wake_r, statuses)
    finally:  # also if the keeper itself failed: nothing it started outlives it unwatched
        _end_all(statuses)


def _serve_until_closed(client: socket.socket, wake_r: int, statuses: dict[int, int]) -> None:
    """Start what the client asks for and reap what ends, until the client's socket closes."""
    buffer, fds = b"", list[int]()
    with selectors.DefaultSelector() as selector:
        selector.register(client, selectors.EVENT_READ)
        selector.register(wake_r, selectors.EVENT_READ)
        while True:
            for key, _ in selector.select():
                if key.fd == wake_r:
                    with contextlib.suppress(BlockingIOError):
                        os.read(wake_r, 4096)
                    _reap(statuses)
                    continue
                data, received, _, _ = socket.recv_fds(client, 1 << 16, 64)
                if not data:
                    return
                buffer, fds = buffer + data, fds + received
                buffer, fds = _serve(buffer, fds, statuses)


def _serve(buffer: bytes, fds: list[int], statuses: dict[int, int]) -> tuple[bytes, list[int]]:
    """Run every whole request in ``buffer``; what is left of it, and the descriptors not used."""
    while len(buffer) >= _HEADER.size:
        (size,) = _HEADER.unpack_from(buffer)
        if len(buffer) < _HEADER.size + size or len(fds) < _FDS_PER_REQUEST:
            break
        request = json.loads(buffer[_HEADER.size : _HEADER.size + size])
        buffer = buffer[_HEADER.size + size :]
        mine, fds = fds[:_FDS_PER_REQUEST], fds[_FDS_PER_REQUEST:]
        status = mine[3]
        try:
            pid = _start(request, mine[:3])
        except (OSError, ValueError, TypeError) as exc:  # ValueError: a NUL in an argument
            code = exc.errno if isinstance(exc, OSError) and exc.errno else errno.EINVAL
            name = exc.filename if isinstance(exc, OSError) else None  # the program, or the cwd
            _say(status, f"error {code} {json.dumps(name)}\n")
            os.close(status)
        else:
            statuses[pid] = status
            _say(status, f"pid {pid}\n")
        finally:
            for fd in mine[:3]:
                os.close(fd)
    return buffer, fds


def _start(request: dict[str, Any], stdio: list[int]) -> int:
    """Start the command in a new session (subprocess's vfork path: no Python runs in the child
    unless it must take a terminal); an exec that fails raises its ``OSError``."""
    process = subprocess.Popen(
        request["argv"],
        stdin=stdio[0],
        stdout=stdio[1],
        stderr=stdio[2],
        cwd=request["cwd"],
        env=request["env"],
        start_new_session=True,
        preexec_fn=_take_terminal if request["tty"] else None,
    )
    process.returncode = 0  # reaped by _reap, never by Popen
    return process.pid


def _take_terminal() -> None:
    """In the child, after ``setsid``: make its stdin (the pty) its controlling terminal."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def _reap(statuses: dict[int, int]) -> None:
    """Collect every child that ended: a command's status goes to its client, an adopted orphan's
    nowhere."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        fd = statuses.pop(pid, None)
        if fd is not None:
            _say(fd, f"exit {status}\n")
            os.close(fd)


def _end_all(statuses: dict[int, int]) -> None:
    """SIGKILL every descendant, again while forks race the sweep, until the keeper has no child."""
    while True:
        for pid in descendants(os.getpid()):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        _reap(statuses)
        try:
            os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:  # no child left: nothing below the keeper runs
            return
        time.sleep(0.005)


def descendants(root: int) -> list[int]:
    """Every process below ``root``, from /proc, parents before their children."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(b")") + 2 :].split()[1])
        children.setdefault(ppid, []).append(int(name))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _say(fd: int, line: str) -> None:
    with contextlib.suppress(OSError):  # a client that stopped listening
        os.write(fd, line.encode())


if __name__ == "__main__":
    main()
