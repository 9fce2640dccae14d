"""Who runs what in an instance whose commands' results we frame as root: the rules docker,
kubernetes, Fly and Tenki share.

What frames a command's results is root's: docker's and kubernetes' exec helper
(runtime/helper.sh), its watchdog, docker's main channel and a session's frame and writer
(runtime/session.sh); Fly's and Tenki's job directories, status and exit files, runners and
watchdog. The user's commands, background processes, session shells and terminals run as
:data:`COMMAND_UID` (E2B's ``user``, the sandbox image's account) with no capability, through
setpriv (:func:`dropped`), so none of them can see into, signal or trace what frames them, open
its files, fds or memory, or write its spool. File requests act with that uid's rights (perl
switching only its effective uid: :data:`PERL_READ`, :data:`PERL_WRITE`, the helper's own
reader). Where we make the container or pod (docker, kubernetes), root keeps only
:func:`root_capabilities`. ``ComputeConfig.command_user`` ``"root"`` (and one call's
``privileged=True``) gives that up.

The choice is written on the instance (docker's label, a pod's or its claim's annotation, Fly's
and Tenki's metadata: :data:`LABEL_COMMAND_USER`) and read back by any process that reaches it,
so no command runs without it: it fails closed. An instance that cannot switch is refused in
:func:`refusal`'s one sentence, never run unseparated (the exec helper says the same sentence,
runtime/helper_files.sh). What root made in the working dir during setup becomes the commands'
(:func:`hand_over`).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from importlib import resources
from typing import TYPE_CHECKING

from praisonai import _limits
from praisonai._errors import ExecError
from praisonai.compute.config import ComputeConfig

if TYPE_CHECKING:
    from praisonai.compute.base import ComputeProvider

#: The commands' uid and gid: E2B's ``user``; the sandbox image's account of that name.
COMMAND_UID = 1000
#: The label (annotation, metadata) that holds ``"UID:GID"`` on an instance whose commands run
#: apart from what frames their results.
LABEL_COMMAND_USER = "praisonai.command-user"
#: The exit status of a script that refuses to run a command unseparated (as helper_files.sh's).
REFUSED = 70

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

#: perl UID GID PATH OFFSET [LIMIT]: the file's bytes, read with only the effective uid switched,
#: so its real and saved uids stay root's and no command can kill, trace or open it: the exec
#: helper's own reader (helper_files.sh), shared rather than copied.
PERL_READ: str = re.search(  # type: ignore[union-attr]
    r"^__p_perl='(.*)'$", resources.files("praisonai.runtime").joinpath("helper_files.sh").read_text(), re.M
).group(1)
#: perl UID GID TARGET PARTIAL new|add [SIZE]: stdin to PARTIAL (beside TARGET; ``new`` creates it
#: and TARGET's parents, ``add`` appends), with only the effective uid switched, as PERL_READ;
#: with SIZE, once PARTIAL holds exactly SIZE bytes it replaces TARGET (keeping a replaced file's
#: mode). Exit 0 done; 1 refused (why on stderr); 3 cannot switch; 4 TARGET is a directory; 5 short.
#: A failed step removes PARTIAL: the old file stays.
PERL_WRITE = (
    'use Fcntl;my($u,$g,$p,$t,$m,$n)=@ARGV;$)="$g $g";$>=$u;exit 3 if $>!=$u||$)!~/^$g /;'
    'sub fail{unlink $t;print STDERR "$!\\n";exit 1}'
    'if($m eq "new"){my $c="";for(split m{/},$p=~s{/[^/]*$}{}r){next if $_ eq "";$c.="/$_";mkdir $c}}'
    "exit 4 if -d $p;"
    'sysopen(my $f,$t,$m eq "new"?O_WRONLY|O_CREAT|O_EXCL:O_WRONLY|O_APPEND|O_NOFOLLOW)'
    'or do{print STDERR "$!\\n";exit 1};binmode STDIN;binmode $f;my $b;'
    "while(my $r=read(STDIN,$b,65536)){print $f $b or fail()}close $f or fail();"
    "exit 0 unless length $n;if((stat $t)[7]!=$n){unlink $t;exit 5}"
    "chmod((stat $p)[2]&07777,$t)if -f $p;rename($t,$p)or fail();exit 0"
)


def command_user(cfg: ComputeConfig) -> str | None:
    """``"UID:GID"`` for the commands of an instance of ``cfg``, or ``None`` (they run as root)."""
    return f"{COMMAND_UID}:{COMMAND_UID}" if cfg.command_user == "user" else None


def root_capabilities(cfg: ComputeConfig) -> list[str]:
    """The capabilities the instance's root keeps (every other one dropped)."""
    return CAPABILITIES + (SEPARATED_CAPABILITIES if cfg.command_user == "user" else [])


def labelled(labels: Mapping[str, str], user: str | None) -> dict[str, str]:
    """``labels`` with the command user's, when there is one."""
    return {**labels, LABEL_COMMAND_USER: user} if user else dict(labels)


def user_of(labels: Mapping[str, str]) -> str | None:
    """The command user an instance was made with (its label), or ``None``."""
    return labels.get(LABEL_COMMAND_USER) or None


async def hand_over(
    provider: ComputeProvider, instance_id: str, where: str, user: str, op: str, *, own_volume: bool = False
) -> None:
    """What root owns under ``where`` becomes ``user``'s (where commands have their own), unless
    ``where`` is a mount (a host's directory keeps its owners; ``own_volume``: a mount there is
    the instance's own, a pod's emptyDir or claim, handed over as the rest); links are not
    followed."""
    script = HAND_OVER if own_volume else HAND_OVER_UNMOUNTED
    handed = await provider.execute(instance_id, script, cwd=where, privileged=True, env={"U": user})
    if handed.exit_code != 0:
        why = handed.stderr.strip()[-_limits.ERROR_DETAIL_CHARS :]
        raise ExecError(f"could not give {where} to the commands' user: {why}", op=op)


def own_shell(argv: list[str]) -> list[str]:
    """The instance's own processes start ``/bin/sh`` by its path: an engine's exec would look
    ``sh`` up in the PATH of the user's env (a pod's exec has no PATH of ours)."""
    return ["/bin/sh", *argv[1:]] if argv[:1] == ["sh"] else argv


def refusal(user: str, *, perl: bool = True) -> str:
    """The one sentence for an instance that cannot run commands as ``user`` apart from what
    frames their results. ``perl``: its file requests need perl too (Fly's, Tenki's); the exec
    helper's fall back without it and say this sentence without perl (helper_files.sh)."""
    needs = "root, setpriv (util-linux) and perl" if perl else "root and setpriv (util-linux)"
    return (
        f"the instance cannot run commands as uid {user.partition(':')[0]} apart from what frames "
        f"their results: it needs {needs} in the image; add them, or ask for command_user='root' "
        "(commands then share root with it and can forge its results)"
    )


def check(user: str) -> str:
    """A shell line that ends its script with status REFUSED and :func:`refusal` on stderr unless
    it runs as root with setpriv and perl (checked before anything runs)."""
    return (
        '{ [ "$(id -u)" = 0 ] && command -v setpriv && command -v perl; } >/dev/null 2>&1 '
        f"|| {{ echo {shlex.quote(refusal(user))} >&2; exit {REFUSED}; }}\n"
    )


def refused(user: str | None, code: int | None, stderr: str) -> bool:
    """Whether a run that ended with ``code`` and ``stderr`` was :func:`check`'s refusal."""
    return bool(user) and code == REFUSED and stderr.strip() == refusal(user or "")


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


def checked(user: str | None, argv: list[str]) -> list[str]:
    """``argv`` (still as root) after :func:`check`: an instance that cannot switch to ``user``
    says so instead; unchanged without a user."""
    if not user:
        return argv
    return ["/bin/sh", "-c", check(user) + 'exec "$@"', "praisonai-check", *argv]


def apart(user: str | None, argv: list[str]) -> list[str]:
    """``argv`` as :func:`dropped` starts it as ``user``, after :func:`check`; unchanged without one."""
    return checked(user, dropped(user, argv))


def as_user(user: str, program: str, *words: str) -> str:
    """A shell command running perl ``program`` (PERL_READ, PERL_WRITE) with ``user``'s ids and
    its arguments ``words`` (shell text, quoted by the caller)."""
    uid, _, gid = user.partition(":")
    return " ".join(["perl", "-e", shlex.quote(program), "--", uid, gid, *words])


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
