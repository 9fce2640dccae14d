"""Who runs what in an instance whose exec helper we run as root (docker, kubernetes).

Apart from the helper, its watchdog and docker's main channel (root, as E2B's envd), the user's
commands, sessions, terminals and background processes run as :data:`COMMAND_UID` (the sandbox
image's ``user``), so none of them can see into, signal or trace the helper, open its fds or
memory, or write its spool (runtime/helper_files.sh). ``ComputeConfig.command_user`` ``"root"``
gives that up. The choice is written on the instance (a label, an annotation: :data:`LABEL_COMMAND_USER`)
and read back by any process that opens a channel to it. Root keeps the capabilities of
:func:`root_capabilities`; commands keep none (setpriv empties every set).
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources

from praisonai.compute.config import ComputeConfig

#: The commands' uid and gid: E2B's ``user``; the sandbox image's account of that name.
COMMAND_UID = 1000
#: The label (annotation) that holds ``"UID:GID"`` on an instance whose commands run apart from
#: its helper.
LABEL_COMMAND_USER = "praisonai.command-user"

#: Root's, enough to install packages and run ordinary tools; no NET_RAW, MKNOD, SYS_*, AUDIT_*.
CAPABILITIES = ["CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID", "NET_BIND_SERVICE"]
#: Root's too where commands run as another uid: the watchdog and the kill sweeps find a
#: command's processes by the marker in their environ, which root reads across uids only with
#: SYS_PTRACE (reading it in-process: the watchdog cannot fork at the process limit); SETPCAP
#: empties the commands' bounding set. Commands hold neither: setpriv leaves them no capability.
SEPARATED_CAPABILITIES = ["SYS_PTRACE", "SETPCAP"]

#: Run in the working dir as root after setup: what root owns there becomes the commands' ($U),
#: not across mounts, links not followed; nothing when the working dir is /.
HAND_OVER = '[ "$PWD" = / ] || find . -xdev -user 0 -exec chown -h "$U" {} +'
#: :data:`HAND_OVER`, but nothing when the working dir is itself a mount (a host's directory, which
#: keeps its owners).
HAND_OVER_UNMOUNTED = f'grep -q " $PWD " /proc/self/mountinfo 2>/dev/null || {HAND_OVER}'


def command_user(cfg: ComputeConfig) -> str | None:
    """``"UID:GID"`` for the commands of an instance of ``cfg``, or ``None`` (they run as root)."""
    return f"{COMMAND_UID}:{COMMAND_UID}" if cfg.command_user == "user" else None


def root_capabilities(cfg: ComputeConfig) -> list[str]:
    """The capabilities the instance's root keeps (every other one dropped)."""
    return CAPABILITIES + (SEPARATED_CAPABILITIES if cfg.command_user == "user" else [])


def labelled(labels: Mapping[str, str], user: str | None) -> dict[str, str]:
    """``labels`` with the command user's, when there is one."""
    return {**labels, LABEL_COMMAND_USER: user} if user else dict(labels)


def own_shell(argv: list[str]) -> list[str]:
    """The instance's own processes start ``/bin/sh`` by its path: an engine's exec would look
    ``sh`` up in the PATH of the user's env (a pod's exec has no PATH of ours)."""
    return ["/bin/sh", *argv[1:]] if argv[:1] == ["sh"] else argv


def dropped(user: str | None, argv: list[str], *, undumpable: bool = False) -> list[str]:
    """``argv`` started as ``user`` (every uid, no capability: as helper.sh's commands), from a
    process of root's, with its HOME where the env gives root's (as helper.sh's); unchanged
    without one. ``undumpable``: ``argv`` (a shell) starts with another effective gid, which the
    kernel takes for a change of credentials, so the process is not dumpable (see
    ``SHELL_START_GID``)."""
    if not user:
        return argv
    uid, _, gid = user.partition(":")
    gids = f"--rgid={gid} --egid={SHELL_START_GID}" if undumpable else f"--regid={gid}"
    # the bounding set is dropped only where root may (CAP_SETPCAP): not a docker default
    return [
        "/bin/sh",
        "-c",
        "for s in /usr/bin/setpriv /bin/setpriv /usr/sbin/setpriv; do [ -x $s ] && break; done; "
        f'if [ "${{HOME:-/root}}" = /root ]; then HOME=/; while IFS=: read -r n x i x x h x; do '
        f'[ "$i" != {uid} ] || {{ HOME=$h; break; }}; done </etc/passwd; export HOME; fi 2>/dev/null; '
        f's="$s --reuid={uid} {gids} --clear-groups --inh-caps=-all"; '
        '$s --bounding-set=-all true 2>/dev/null && s="$s --bounding-set=-all"; exec $s -- "$@"',
        "praisonai-user",
        *argv,
    ]


def session(spool: str, user: str | None, argv: list[str]) -> list[str]:
    """A session's ``argv`` (runtime/session.sh: its frame, root's), under its guard
    (``watchdog.guarded_session``), with ``user``'s launcher for its shell: the frame and its
    writer, which hold the session's secret, stay root; only the shell runs as ``user``."""
    from praisonai.compute.watchdog import guarded_session

    launcher = [] if not user else ["/bin/sh", "-c", _RELAYED, _RELAY]
    return guarded_session(spool, [*own_shell(argv), *launcher, *dropped(user, [], undumpable=True)], user)


_RELAY = resources.files(__package__).joinpath("session_relay.pl").read_text()

#: A session shell's effective gid as it starts: not its real one, so the kernel starts it not
#: dumpable; the shell sets it back at once (dash, bash and busybox sh all do), keeping it only
#: as its saved gid, and the programs it runs have COMMAND_UID's gid alone. Not dumpable, and of
#: a saved gid they have not, the shell is a process they cannot trace or take an fd from, whose
#: fds, memory and environ they cannot open (runc; gVisor lists its fds to them, so the shell's
#: end of its writer's channel is a socket, which no /proc/PID/fd opens).
SHELL_START_GID = 65534

# sh -c RELAYED RELAY DROP-ARGV... SHELL-ARGV...: the shell through session_relay.pl, where the
# image has perl; without it, the shell gets the frame's stdin and its writer's pipe itself (a
# program it runs may then type requests into that stdin, and, under gVisor, which lists a
# not-dumpable process's fds to its uid, write into that pipe).
_RELAYED = (
    'for p in /usr/bin/perl /bin/perl /usr/local/bin/perl; do [ -x $p ] && exec $p -e "$0" -- "$@"; done; '
    'exec "$@"'
)
