"""Who an instance's commands run as, apart from what frames their results: the rules the
providers that run our framing as root share (docker, Fly, Tenki).

What frames a result (the exec helper, a job's directory, its status and exit files, the watchdog,
the guest agent's pipes) is root's; the user's commands, background processes and sessions run as
``COMMAND_UID`` (E2B's ``user``) with no capability, through ``setpriv``, so none of them can see
into, signal or trace what frames them, open its files or fds, or write its spool. File requests
act with that uid's rights. ``ComputeConfig.command_user`` ``"root"`` (and one call's
``privileged=True``) gives that up. The choice is the instance's label, read back by any process
that reaches it, so no command runs without it: it fails closed. An instance that cannot switch
(no root, no setpriv; perl for the one-shot providers' file requests) is refused in
:func:`refusal`'s sentence, never run unseparated.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from importlib import resources
from typing import TYPE_CHECKING

from praisonai._errors import ExecError
from praisonai.compute.config import ComputeConfig

if TYPE_CHECKING:
    from praisonai.compute.base import ComputeProvider

#: The commands' uid and gid: E2B's ``user``; the sandbox image's account of that name.
COMMAND_UID = 1000
#: The label that holds ``"UID:GID"`` on an instance whose commands run apart from their framing.
LABEL_COMMAND_USER = "praisonai.command-user"
#: The exit status of a script that refuses to run a command unseparated (as helper.sh's).
REFUSED = 70

#: Run in the working dir as root after setup: what root owns there becomes the commands' ($U),
#: not across mounts, links not followed; nothing when the working dir is itself a mount or /.
HAND_OVER = (
    '[ "$PWD" = / ] || grep -q " $PWD " /proc/self/mountinfo 2>/dev/null '
    '|| find . -xdev -user 0 -exec chown -h "$U" {} +'
)

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


async def hand_over(provider: ComputeProvider, instance_id: str, where: str, user: str, op: str) -> None:
    """What root owns under ``where`` becomes ``user``'s (where commands have their own), unless
    ``where`` is a mount (a host's directory keeps its owners); links are not followed."""
    handed = await provider.execute(instance_id, HAND_OVER, cwd=where, privileged=True, env={"U": user})
    if handed.exit_code != 0:
        why = handed.stderr.strip()[-300:]
        raise ExecError(f"could not give {where} to the commands' user: {why}", op=op)


def command_user(cfg: ComputeConfig) -> str | None:
    """``"UID:GID"`` for the commands of an instance of ``cfg``, or ``None`` (they run as root)."""
    return f"{COMMAND_UID}:{COMMAND_UID}" if cfg.command_user == "user" else None


def labelled(labels: Mapping[str, str], user: str | None) -> dict[str, str]:
    return {**labels, LABEL_COMMAND_USER: user} if user else dict(labels)


def user_of(labels: Mapping[str, str]) -> str | None:
    """The command user an instance was made with (its label), or ``None``."""
    return labels.get(LABEL_COMMAND_USER) or None


def refusal(user: str) -> str:
    """The one sentence for an instance that cannot run commands as ``user`` apart."""
    return (
        f"the instance cannot run commands as uid {user.partition(':')[0]} apart from what frames "
        "their results: it needs root, setpriv (util-linux) and perl in the image; add them, or ask "
        "for command_user='root' (commands then share root with it and can forge its results)"
    )


def check(user: str) -> str:
    """A shell line that ends its script with status REFUSED and :func:`refusal` on stderr unless
    it runs as root with setpriv and perl (checked before anything runs)."""
    return (
        '{ [ "$(id -u)" = 0 ] && command -v setpriv && command -v perl; } >/dev/null 2>&1 '
        f"|| {{ echo {shlex.quote(refusal(user))} >&2; exit {REFUSED}; }}\n"
    )


def dropped(user: str | None, argv: list[str]) -> list[str]:
    """``argv`` started as ``user`` (every uid, no capability: as helper.sh's commands), from a
    process of root's, with its HOME where the env gives root's (as helper.sh's); unchanged
    without one."""
    if not user:
        return argv
    uid, _, gid = user.partition(":")
    # the bounding set is dropped only where root may (CAP_SETPCAP): not a docker default
    return [
        "/bin/sh",
        "-c",
        "for s in /usr/bin/setpriv /bin/setpriv /usr/sbin/setpriv; do [ -x $s ] && break; done; "
        f'if [ "${{HOME:-/root}}" = /root ]; then HOME=/; while IFS=: read -r n x i x x h x; do '
        f'[ "$i" != {uid} ] || {{ HOME=$h; break; }}; done </etc/passwd; export HOME; fi 2>/dev/null; '
        f's="$s --reuid={uid} --regid={gid} --clear-groups --inh-caps=-all"; '
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


def refused(user: str | None, code: int | None, stderr: str) -> bool:
    """Whether a run that ended with ``code`` and ``stderr`` was :func:`check`'s refusal."""
    return bool(user) and code == REFUSED and stderr.strip() == refusal(user or "")


def as_user(user: str, program: str, *words: str) -> str:
    """A shell command running perl ``program`` (PERL_READ, PERL_WRITE) with ``user``'s ids and
    its arguments ``words`` (shell text, quoted by the caller)."""
    uid, _, gid = user.partition(":")
    return " ".join(["perl", "-e", shlex.quote(program), "--", uid, gid, *words])


__all__ = [
    "COMMAND_UID",
    "HAND_OVER",
    "LABEL_COMMAND_USER",
    "PERL_READ",
    "PERL_WRITE",
    "REFUSED",
    "apart",
    "as_user",
    "check",
    "checked",
    "command_user",
    "dropped",
    "hand_over",
    "labelled",
    "refusal",
    "refused",
    "user_of",
]
