"""Who a docker instance's commands run as: apart from its exec helper, watchdog and main channel
(root, as E2B's envd), the user's commands, session shells, terminals and background processes run as
``COMMAND_UID`` (the sandbox image's ``user``), so none of them can see into, signal or trace the
helper, open its fds or memory, or write its spool (helper.sh). ``ComputeConfig.command_user``
``"root"`` gives that up. The choice is the container's label, read back by any process that
opens a channel to it, so a channel never starts without it: it fails closed.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from typing import Any

from praisonai.compute.config import ComputeConfig
from praisonai.compute.providers.docker._exec import own_shell

#: The commands' uid and gid: E2B's ``user``; the sandbox image's account of that name.
COMMAND_UID = 1000
#: The label that holds ``"UID:GID"`` on a container whose commands run apart from its helper.
LABEL_COMMAND_USER = "praisonai.command-user"


#: Run in the working dir as root after setup: what root owns there becomes the commands' ($U),
#: not across mounts, links not followed; nothing when the working dir is itself a mount or /.
HAND_OVER = (
    '[ "$PWD" = / ] || grep -q " $PWD " /proc/self/mountinfo 2>/dev/null '
    '|| find . -xdev -user 0 -exec chown -h "$U" {} +'
)


def command_user(cfg: ComputeConfig) -> str | None:
    """``"UID:GID"`` for the commands of an instance of ``cfg``, or ``None`` (they run as root)."""
    return f"{COMMAND_UID}:{COMMAND_UID}" if cfg.command_user == "user" else None


def labelled(labels: Mapping[str, str], user: str | None) -> dict[str, str]:
    return {**labels, LABEL_COMMAND_USER: user} if user else dict(labels)


def user_of(inspected: Mapping[str, Any]) -> str | None:
    """The command user an inspected container was made with (its label)."""
    labels = (inspected.get("Config") or {}).get("Labels") or {}
    return labels.get(LABEL_COMMAND_USER) or None


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
