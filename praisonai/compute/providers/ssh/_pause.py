"""Removal and pause of SSH instances on their host, by the scripts this module holds.

Both kill every process of the instance (they all carry its marker, ``PRAISONAI_INSTANCE=<id>``;
the sweep repeats while forks race it). A removal then deletes its directories; a pause keeps
them and leaves a ``paused`` file beside ``instance.json``, so every process that reaches the host
sees the state. Resuming deletes that file; the next command starts afresh in the kept workspace.
"""

from __future__ import annotations

import shlex
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from praisonai._errors import ExecError
from praisonai._types import InstanceInfo
from praisonai.compute._threads import run_blocking
from praisonai.compute.providers.ssh._link import HostLink
from praisonai.runtime.pool import ChannelPool

MARKER = "paused"

# $1 the instance id, $2 its workspace, $3 its meta dir; exit 3: there is no such instance.
#: Also ends the processes of an instance restored from a snapshot (``_snapshot``).
KILL_ALL = """
[ -f "$3/instance.json" ] || exit 3
n=0
while [ $n -lt 20 ]; do
  # grep exits 2 for other users' unreadable processes even when it found ours: test the output
  p=$(grep -lF -- "PRAISONAI_INSTANCE=$1" /proc/[0-9]*/environ 2>/dev/null)
  [ -n "$p" ] || break
  for f in $p; do f=${f#/proc/}; kill -9 "${f%/environ}" 2>/dev/null; done
  n=$((n + 1))
done
"""
_DESTROY = KILL_ALL + 'rm -rf -- "$2" "$3"\n'
_PAUSE = KILL_ALL + f': > "$3/{MARKER}"\n'
_RESUME = f'[ -f "$3/instance.json" ] || exit 3\nrm -f -- "$3/{MARKER}"\n'
_PAUSED = f'[ -f "$3/instance.json" ] || exit 3\n[ -e "$3/{MARKER}" ] || exit 1\n'
_DISK = '[ -f "$3/instance.json" ] || exit 3\ndu -sk -- "$2" | cut -f1\n'


class Where(Protocol):
    """Where an instance lives on its host (the provider's ``_Place``)."""

    @property
    def instance_id(self) -> str: ...
    @property
    def link(self) -> HostLink: ...
    @property
    def workspace(self) -> str: ...
    @property
    def meta(self) -> str: ...
    def info(self, *, paused: bool = False) -> InstanceInfo: ...


async def _run(at: Where, script: str, op: str, ok: tuple[int, ...] = (0, 3)) -> tuple[int, bytes]:
    """Run ``script`` on the instance's host; its exit status (one of ``ok``) and output.
    Status 3: there is no such instance."""
    argv = ["sh", "-c", script, f"praisonai-{op}", at.instance_id, at.workspace, at.meta]
    code, out, err = await run_blocking(at.link.run, shlex.join(argv))
    if code not in ok:
        raise ExecError(
            f"could not {op} {at.instance_id} on {at.link.host.label}: {err.decode(errors='replace')}",
            op=op,
        )
    return code, out


async def destroy(at: Where) -> bool:
    """Kill the instance's processes and remove its directories; whether it existed."""
    return (await _run(at, _DESTROY, "shutdown"))[0] == 0


@dataclass(frozen=True)
class SSHPauser:
    """``SSHCompute``'s pauser (``abilities.pause.Pauser``): ``place`` finds where an instance
    lives (``InstanceNotFoundError`` when nowhere), ``channels`` are the provider's."""

    place: Callable[[str], Awaitable[Where]]
    channels: ChannelPool

    async def pause(self, instance_id: str) -> InstanceInfo:
        """Kill the instance's processes, keep its files, mark it paused (idempotent)."""
        self.channels.drop(instance_id)
        at = await self.place(instance_id)
        await _run(at, _PAUSE, "pause")
        return at.info(paused=True)

    async def resume(self, instance_id: str) -> InstanceInfo:
        """Mark the instance running again (idempotent)."""
        at = await self.place(instance_id)
        await _run(at, _RESUME, "resume")
        return at.info()

    async def paused_disk(self, instance_id: str) -> int | None:
        return await disk(await self.place(instance_id))


async def is_paused(at: Where) -> bool:
    return (await _run(at, _PAUSED, "status", ok=(0, 1, 3)))[0] == 0


async def disk(at: Where) -> int | None:
    """The workspace's size on its host (``du``, in bytes), or ``None`` when it cannot say."""
    code, out = await _run(at, _DISK, "measure")
    text = out.decode(errors="replace").strip()
    return int(text) * 1024 if code == 0 and text.isdigit() else None
