"""A local process started through bubblewrap (the ``local`` provider's isolated instances)."""

from __future__ import annotations

import contextlib
import os

from praisonai.runtime.transport import ProcessTransport


class SandboxedProcessTransport(ProcessTransport):
    """A process started through bubblewrap. Signals for the group spare bwrap's own processes:
    a Ctrl-C meant for the command would otherwise end bwrap, and the whole sandbox with it."""

    def signal_group(self, signum: int) -> bool:
        for pid in _group_members(self.process.pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signum)
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
