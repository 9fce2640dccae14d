"""Bubblewrap for the ``local`` provider's isolated instances: the sandbox's argv, and a local
process started through it."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterable
from pathlib import Path

from praisonai._limits import KILL_GRACE_S
from praisonai.runtime.transport import ProcessTransport

# What an isolated command sees of the host, read-only. /etc is bound file by file so that
# /etc/shadow and other host secrets stay out.
_RO_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/opt")
_RO_ETC = (
    "/etc/alternatives",
    "/etc/ca-certificates",
    "/etc/ssl",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/nsswitch.conf",
    "/etc/hosts",
    "/etc/resolv.conf",
    "/etc/passwd",
    "/etc/group",
    "/etc/mime.types",
    "/etc/python3",
    "/etc/python3.11",
)


def bwrap_argv(
    *,
    root: Path,
    workspace: Path,
    working_dir: str,
    network: str,
    cwd: str | None,
    hidden: Iterable[Path] = (),
    new_session: bool = True,
) -> list[str]:
    """The ``bwrap`` command line (to be followed by the command) for an instance kept in
    ``root``: the system read-only, ``workspace`` writable at ``working_dir``, no network when
    ``network`` is "none", starting in ``cwd`` (``None``: the caller adds ``--chdir``).

    Every sandbox has its own pid namespace and no capability (bubblewrap started by root keeps
    root's unless told not to: a command could then remount the read-only system writable). The
    spool, where the exec helper frames background processes' results outside every sandbox, is
    in none.

    ``hidden`` (the praisonai home, where every instance's record and workspace lives) is masked
    with an empty tmpfs wherever the read-only system binds would show it (a home under ``/opt``):
    an instance never sees another's env or files. The binds that follow take their sources from
    the host, so the instance's own workspace still arrives."""
    argv = ["bwrap", "--die-with-parent", "--unshare-all", "--cap-drop", "ALL"]
    if new_session:
        argv.append("--new-session")
    if network != "none":
        argv.append("--share-net")
    bound = (*_RO_SYSTEM, *_RO_ETC)
    for path in bound:
        argv += ["--ro-bind-try", path, path]
    places = sorted({p for h in hidden for p in _seen_at(Path(os.path.realpath(h)), bound)})
    for place in places:  # the outermost only: a mask inside another would show its name
        if not any(Path(other) in Path(place).parents for other in places):
            argv += ["--tmpfs", place]
    argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    argv += ["--bind", str(workspace), working_dir]
    return argv if cwd is None else [*argv, "--chdir", cwd]


def _seen_at(real: Path, bound: Iterable[str]) -> list[str]:
    """Where the host path ``real`` (symlinks resolved) appears inside the sandbox through the
    read-only binds ``bound`` (each seen at its own path, showing what it resolves to on the host)."""
    places = []
    for path in bound:
        target = Path(os.path.realpath(path))
        if real == target or target in real.parents:
            places.append(str(Path(path) / real.relative_to(target)))
    return places


class SandboxedProcessTransport(ProcessTransport):
    """A process started through bubblewrap. Signals for the group spare bwrap's own processes:
    a Ctrl-C meant for the command would otherwise end bwrap, and the whole sandbox with it."""

    def signal_group(self, signum: int) -> bool:
        for pid in _group_members(self.process.pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signum)
        return True

    def kill_all(self) -> bool:
        """Its own pid namespace holds everything it started: killing bubblewrap ends the
        namespace's init (``--die-with-parent``), and the kernel kills the rest with it."""
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(KILL_GRACE_S)
        return True


def _group_members(pgid: int) -> list[int]:
    """Processes of group ``pgid`` other than bubblewrap itself, from /proc."""
    members = []
    for stat in os.listdir("/proc"):
        if not stat.isdigit():
            continue
        try:
            with open(f"/proc/{stat}/stat", "rb") as f:
                line = f.read().decode(errors="replace")
        except OSError:
            continue
        comm, fields = line[line.index("(") + 1 : line.rindex(")")], line[line.rindex(")") + 2 :].split()
        if int(fields[2]) == pgid and comm != "bwrap":
            members.append(int(stat))
    return members
