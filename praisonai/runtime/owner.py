"""Owner death for process groups started on this machine: they die with the process that
started them.

A command started by a client that is then SIGKILLed would run on, unobserved, after everyone was
told its call was interrupted. So each client process keeps one small keeper process (a POSIX sh
loop, started on first use in a session of its own) and tells it, over a pipe only the client
holds, which process groups to watch ("+ <pgid>") and which to let go ("- <pgid>"). When the pipe
closes — the client died, however — the keeper kills every group it still watches, at once.

Unlike ``PR_SET_PDEATHSIG`` this covers a whole group, not one process, and does not fire when
the client *thread* that spawned it ends. Processes that left their group (``setsid``) are not
covered: the instance's shutdown and reaper find those by the instance's marker.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import subprocess
import threading

from praisonai._limits import KEEPER_EXIT_S

# Reads "+ pgid" / "- pgid" lines until end-of-file, then SIGKILLs the groups still listed.
# Signals that end a process politely are ignored: only the client's death (or SIGKILL) ends it.
KEEPER = """trap '' INT TERM HUP QUIT
g=' '
while IFS=' ' read -r op p; do
  case $op in
  +) g="$g$p " ;;
  -) case $g in *" $p "*) g="${g%%" $p "*} ${g#*" $p "}" ;; esac ;;
  esac
done
for p in $g; do kill -9 "-$p" 2>/dev/null; done
"""

_lock = threading.Lock()
_keeper: subprocess.Popen[bytes] | None = None


def watch(pgid: int) -> None:
    """Kill process group ``pgid`` if this process dies before :func:`release` is called for it."""
    _tell(f"+ {pgid}\n".encode())


def release(pgid: int) -> None:
    """Stop watching ``pgid``: it ended, or was let go on purpose."""
    _tell(f"- {pgid}\n".encode(), start=False)


def _tell(line: bytes, *, start: bool = True) -> None:
    """One line to the keeper (a pipe write under PIPE_BUF: atomic); a keeper that was killed is
    replaced for the groups watched from then on."""
    global _keeper
    with _lock:
        for _ in range(2):
            keeper = _keeper
            if keeper is None or keeper.poll() is not None:
                if not start:
                    return
                keeper = _keeper = _start()
            assert keeper.stdin is not None
            try:
                keeper.stdin.write(line)
                return
            except OSError:
                _keeper = None


def _start() -> subprocess.Popen[bytes]:
    # its own session: a Ctrl-C meant for the client's terminal does not reach it
    return subprocess.Popen(
        ["/bin/sh", "-c", KEEPER, "praisonai-owner-keeper"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        bufsize=0,
        start_new_session=True,
        env={"PATH": "/usr/bin:/bin"},
    )


def forget_keeper() -> None:
    """After ``fork()`` in a child: the parent's keeper is not this process's."""
    global _keeper
    _keeper = None


def _exiting() -> None:
    """At a normal exit, end the keeper as the exit would (the pipe closes: the groups it still
    watches die), and reap it, rather than leave a running child to the garbage collector."""
    keeper = _keeper
    if keeper is None or keeper.stdin is None:
        return
    keeper.stdin.close()
    with contextlib.suppress(subprocess.TimeoutExpired):
        keeper.wait(KEEPER_EXIT_S)


with contextlib.suppress(AttributeError):  # no fork on this platform
    os.register_at_fork(after_in_child=forget_keeper)
atexit.register(_exiting)
