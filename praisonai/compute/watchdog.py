"""The dead-man's switch of an instance that runs our watchdog as its main process (a docker
container, a kubernetes pod), and its session guard.

The instance runs the watchdog (``watchdog.sh``) instead of ``sleep infinity``; the watchdog exits
once the instance's ``Lifetime`` says so: nothing was active for its idle limit, or it is ``ttl_s``
old. The instance then ends (a container made with ``auto_remove`` is removed by its engine; one
of ``idle_action='pause'`` is kept, paused, and starts this again when resumed; a pod
is deleted by the next ``shutdown``/``gc``, unless it pauses: then its claim keeps the working dir
and the next resume makes the pod again). So no instance outlives its purpose even when its
client was SIGKILLed and nothing else ever reaps it. Activity is what the exec helper marks in its
spool.

The watchdog is the instance's own process, so nothing of the user's may break it: it starts
with an environment of its own (``env -i``; the user's env reaches only their commands), under
bash where the image has it (its ``read -t`` waits without forking, which a fork bomb would
refuse), and it never ends because a fork failed (see the script). Shared by the providers as
shell text (data), since providers share no code.
"""

from __future__ import annotations

from importlib import resources

from praisonai._lifetime import Lifetime, whole_units
from praisonai.compute.base import SYSTEM_PATH

WATCHDOG = resources.files("praisonai.compute").joinpath("watchdog.sh").read_text()

# sh -c LAUNCH name SCRIPT name ARGS...: run SCRIPT (with its name and ARGS) cleanly, as above.
_LAUNCH = (
    f"PATH={SYSTEM_PATH}; unset BASH_ENV ENV; s=/bin/sh; "
    'for b in /bin/bash /usr/bin/bash; do if [ -x "$b" ]; then s=$b; break; fi; done; '
    'if command -v env >/dev/null 2>&1; then exec env -i PATH="$PATH" "$s" -c "$@"; fi; '
    'exec "$s" -c "$@"'
)

# sh -c SESSION_GUARD name SPOOL USER SHELL-ARGV...: start the session shell with its input through a
# forwarder (`cat`) that ends when the client's connection does: the engine closes the exec's
# stdin then, while the shell itself may be busy with a command that never reads it. The
# forwarder's pid goes to busy/<shell pid>.by, so the watchdog counts the shell's command only
# while its client is there. The shell keeps this process's pid (and so its process group); the
# forwarder is detached from it (its parent becomes init). When the client is gone (it died, or
# closed the session), the forwarder kills the shell's process group: a command nobody can read
# any more does not run on. Without a FIFO, the shell starts as is. With USER ("UID:GID"; "-" for
# none, never an empty word, which some exec APIs drop), SHELL-ARGV already starts the shell as
# it (watchdog.py's caller), and this guard, still root, lets that uid mark the session's
# activity: it may pass through the spool (not list it; x/ and bg/ stay root's), write alive and
# .wake (whose only meaning is "something happened"), read the bound env (which its commands have
# anyway) and write its own busy/<pid>.
SESSION_GUARD = (
    f"s=$1 u=$2; shift 2; f=$s/busy/.$$.in; P={SYSTEM_PATH}; "
    'PATH=$P mkdir -p -- "$s/busy" 2>/dev/null; '
    'if PATH=$P mkfifo -m 600 -- "$f" 2>/dev/null; then '
    "exec 3<&0; "
    '( ( PATH=$P cat <&3 >"$f" 3<&-; kill -9 "-$$" 2>/dev/null ) & echo $! >"$s/busy/$$.by" ); '
    'exec <"$f" 3<&-; PATH=$P rm -f -- "$f"; '
    "fi; "
    'if [ "$u" != - ]; then o=$PATH PATH=$P; chmod 711 "$s" "$s/busy"; : >>"$s/alive"; chmod 666 "$s/alive"; '
    '[ ! -p "$s/.wake" ] || chmod 666 "$s/.wake"; [ ! -f "$s/env" ] || chmod 644 "$s/env"; '
    ': >"$s/busy/$$"; chown "$u" "$s/busy/$$"; PATH=$o; fi 2>/dev/null; '
    'exec "$@"'
)


def watchdog_command(lifetime: Lifetime, spool: str) -> list[str]:
    """The instance's main command, which stops it by itself when ``lifetime`` says so.
    ``spool`` is where the exec helper leaves its activity markers."""
    name = "praisonai-watchdog"
    limits = (str(whole_units(lifetime.idle_limit_s)), str(whole_units(lifetime.ttl_s)))
    return ["/bin/sh", "-c", _LAUNCH, name, WATCHDOG, name, *limits, spool]


# sh -c MAIN name HELPER SPOOL DIGEST LOG USER WATCHDOG-ARGV...: an exec helper on the instance's main
# stdin, and the watchdog as the main process. The helper starts at once but takes its nonce from
# the first line that arrives, then says hello, so that the hello reaches the client that attached
# (nothing is attached before; what the container prints then is lost). DIGEST (the nonce's, for
# the owner's check) is not used here. The container's output never ends while it runs (PID 1
# holds it), so the helper's end is said instead: a waiter prints "HELPER_ENDED <secret>" on
# stderr once the helper is gone, however it died. A command can write that stderr too (it is
# /proc/1/fd/2), so the line carries a secret the client sent with the nonce: the helper hands it
# to the waiter over a pipe (the waiter's `$(...)`, the helper's fd 4) and closes that before any
# command runs, so it is on no command line, in no env and in no file. The line starts with a
# newline: whatever a command left unended there cannot hide it. Where the image has setsid, the
# waiter and the helper each get a session of their own, as an exec has: a command's `kill 0`
# reaches neither the watchdog nor the waiter. The watchdog has no stdin and writes its notices to
# LOG (/dev/null if LOG cannot be opened), never onto the container's stdout, which is the
# helper's reply stream (fd 5 carries it past the waiter's `$(...)`). fd 3 carries stdin past the
# rule that a background list of a non-interactive shell reads /dev/null.
# USER ("UID:GID", or empty): the helper's commands run as it (helper.sh), and the working dir,
# when root owns it and it is neither / nor a mount (a host's directory keeps its owner), is its.
# SPOOL is root's alone, as the helper makes it (umask 077), also when it is a volume's mountpoint,
# which the engine made world-readable (docker's _spec.spool_volume).
HELPER_ENDED = "praisonai-helper-ended"
_WAITER = (
    'e=$($1 /bin/sh -c "$2" praisonai-helper "$3" - attached "$4" 4>&1 >&5 5>&-); '
    f'[ -z "$e" ] || printf "\\n{HELPER_ENDED} %s\\n" "$e" >&2'
)
_MAIN = (
    'h=$1 s=$2 l=$4 u=$5; shift 5; exec 3<&0; chmod 700 "$s" 2>/dev/null; '
    '{ : >>"$l"; } 2>/dev/null || l=/dev/null; '
    'if [ -n "$u" ] && [ "$PWD" != / ] && [ -n "$(find . -maxdepth 0 -user 0 2>/dev/null)" ] '
    '&& ! grep -q " $PWD " /proc/self/mountinfo 2>/dev/null; then chown "$u" . 2>/dev/null; fi; '
    "g=; command -v setsid >/dev/null 2>&1 && g=setsid; "
    f"$g /bin/sh -c '{_WAITER}' "
    'praisonai-waiter "$g" "$h" "$s" "$u" 0<&3 3<&- 5>&1 & '
    'exec "$@" 3<&- </dev/null >>"$l" 2>&1'
)


def main_command(
    watchdog: list[str], helper: str, spool: str, digest: str, log: str, user: str | None = None
) -> list[str]:
    """The instance's main command: ``watchdog`` (``watchdog_command``'s) without stdin, its
    output appended to ``log``, and the exec helper (``helper``, its script) on the main stdin with
    ``spool``, whose nonce is the first line that arrives there (``: NONCE``); ``digest``, the
    nonce's, is kept in the command for its owner to check a key against (never the nonce).
    ``user``: ``"UID:GID"`` the helper's commands run as (``helper_argv``'s)."""
    return ["/bin/sh", "-c", _MAIN, "praisonai-main", helper, spool, digest, log, user or "", *watchdog]


def guarded_session(spool: str, argv: list[str], user: str | None = None) -> list[str]:
    """``argv`` (a session shell's) started so that its commands count as activity for the
    watchdog only while the client that opened it is connected. ``user``: ``"UID:GID"`` that
    ``argv`` switches to (the guard lets it mark activity), or ``None``."""
    return ["/bin/sh", "-c", SESSION_GUARD, "praisonai-session-guard", spool, user or "-", *argv]


__all__ = ["HELPER_ENDED", "SESSION_GUARD", "WATCHDOG", "guarded_session", "main_command", "watchdog_command"]
