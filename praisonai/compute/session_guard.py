"""A session shell whose busy command keeps its instance alive only while its client is connected.

For providers whose instance runs the in-instance watchdog (``watchdog.sh``, the docker
package's file) and the helper's spool: docker, and kubernetes, which runs the same script as its
pod's main process. One shell line, shared as data — the providers share no code.
"""

from __future__ import annotations

from praisonai.compute.base import SYSTEM_PATH

# sh -c SESSION_GUARD name SPOOL SHELL-ARGV...: start the session shell with its input through a
# forwarder (`cat`) that ends when the client's connection does: the engine closes the exec's
# stdin then, while the shell itself may be busy with a command that never reads it. The
# forwarder's pid goes to busy/<shell pid>.by, so the watchdog counts the shell's command only
# while its client is there. The shell keeps this process's pid (and so its process group); the
# forwarder is detached from it (its parent becomes init). Without a FIFO, the shell starts as is.
SESSION_GUARD = (
    f"s=$1; shift; f=$s/busy/.$$.in; P={SYSTEM_PATH}; "
    'if PATH=$P mkfifo -m 600 -- "$f" 2>/dev/null; then '
    "exec 3<&0; "
    '( PATH=$P cat <&3 >"$f" 3<&- & echo $! >"$s/busy/$$.by" ); '
    'exec <"$f" 3<&-; PATH=$P rm -f -- "$f"; '
    "fi; "
    'exec "$@"'
)


def guarded_session(spool: str, argv: list[str]) -> list[str]:
    """``argv`` (a session shell's) started so that its commands count as activity for the
    watchdog only while the client that opened it is connected."""
    return ["/bin/sh", "-c", SESSION_GUARD, "praisonai-session-guard", spool, *argv]


__all__ = ["SESSION_GUARD", "guarded_session"]
