"""SSH snapshots: a tar archive of the instance's workspace, kept on its host beside the instances::

    <root>/.praisonai/snapshots/<snapshot-id>.<random>.tar     (the directory mode 0700)

The archive is written by GNU tar on the host, as the login user every command of the instance
runs as, to a new file (``mktemp``) that is linked to its name only when whole: a file planted at
the name is never written through or adopted, and the random part of the name is known to no
instance (another one cannot name it in advance to plant or overwrite an archive). Only the
workspace is archived: never the instance's record, its env file nor its spool (the bound env),
so no env value is in a snapshot.

The instance controls every file under its workspace, so nothing there is followed out of it.
Taking one: tar archives links as links and opens nothing through one (``O_NOFOLLOW``), and the
workspace itself must be the directory at its path, not a link to another. Restoring one: the
archive is unpacked into a new empty directory by GNU tar, which strips a leading ``/`` from
member and hard-link names, refuses a member with a ``..`` component, and makes a link to an
absolute or ``..`` path only after every other member (none is written through one): a refused
member (an archive tampered with on the host) refuses the whole restore, and nothing changes.
Then the instance's processes are ended (as a pause does) and the new directory takes the
workspace's place under the same id. An instance started from a snapshot is made on the snapshot's
host, empty, then restored so.

Each file is archived whole as it is when tar opens it: one replaced by a rename meanwhile is
archived as one version or the other, never a mix (a file rewritten in place while it is read may
be caught mid-write, as any copy would).
"""

from __future__ import annotations

import contextlib
import posixpath
import re
import shlex
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from praisonai._errors import (
    ExecError,
    InstanceNotFoundError,
    PathOutsideWorkspaceError,
    ProviderUnavailableError,
    ProvisionError,
)
from praisonai._types import InstanceInfo
from praisonai.compute._threads import run_blocking
from praisonai.compute.config import ComputeConfig
from praisonai.compute.providers.ssh import _files
from praisonai.compute.providers.ssh._link import HostLink
from praisonai.compute.providers.ssh._pause import KILL_ALL, Where, is_paused
from praisonai.runtime.pool import ChannelPool

#: Seconds an archive may take to write or unpack on the host (a large workspace, a slow disk).
ARCHIVE_TIMEOUT_S = 900.0
_STORE = "snapshots"
_ARCHIVE = re.compile(r"(snap_[0-9a-f]{12})\.[A-Za-z0-9]+\.tar")

# Every script: $1 the instance id, $2 its workspace, $3 its meta dir, $4 the snapshots' directory,
# $5 the snapshot id. Exit 3: there is no such instance; 8: the host's tar is not GNU tar.
_CHECKS = """
[ -f "$3/instance.json" ] || exit 3
tar --version 2>/dev/null | grep -q 'GNU tar' || exit 8
"""
# Exit 4: the workspace is not the directory at its path (a link put there); 9: nor is the store.
_TAKE = (
    _CHECKS
    + """
mkdir -p -- "$4" && [ ! -L "$4" ] && chmod 700 -- "$4" || exit 9
cd -P -- "$2" && [ "$(stat -c %d:%i .)" = "$(stat -c %d:%i -- "$2")" ] || exit 4
part=$(mktemp -- "$4/.$5.XXXXXXXXXX") || exit 1
tar --create --format=posix --numeric-owner --file="$part" \
  --warning=no-file-changed --warning=no-file-removed .
[ $? -le 1 ] && ln -T -- "$part" "$4/$5.${part##*.}.tar" && wc -c < "$4/$5.${part##*.}.tar"
status=$?
rm -f -- "$part"
exit $status
"""
)
# Exit 5: more than one archive has the snapshot's name; 6: none has; 7: tar could not unpack it.
_RESTORE = (
    _CHECKS
    + """
found=
for f in "$4/$5".*.tar; do
  [ -f "$f" ] && [ ! -L "$f" ] || continue
  [ -z "$found" ] || exit 5
  found=$f
done
[ -n "$found" ] || exit 6
fresh=$(mktemp -d -- "$3/restoring.XXXXXXXXXX") || exit 1
tar --extract --file="$found" --directory="$fresh" --no-same-owner --preserve-permissions ||
  { rm -rf -- "$fresh"; exit 7; }
"""
    + KILL_ALL
    + """
if [ -e "$2" ] || [ -L "$2" ]; then mv -T -- "$2" "$fresh.old" || { rm -rf -- "$fresh"; exit 1; }; fi
mv -T -- "$fresh" "$2" || { mv -T -- "$fresh.old" "$2"; rm -rf -- "$fresh"; exit 1; }
rm -rf -- "$fresh.old"
"""
)
# $1 the snapshots' directory, $2 the snapshot id; exit 1: there was no archive of it.
_REMOVE = """
set -- "$1" "$2" "$1/$2".*.tar
[ -e "$3" ] || [ -L "$3" ]
gone=$?
rm -f -- "$1/$2".*.tar "$1/.$2".*
exit $gone
"""


@dataclass(frozen=True)
class SSHSnapshotter:
    """``SSHCompute``'s snapshotter (``abilities.snapshots.Snapshotter``): ``place`` finds where an
    instance lives (``InstanceNotFoundError`` when nowhere), ``create`` makes an empty instance on
    the host given (the provider's ``_create``), ``links`` are the provider's hosts, ``channels``
    its channel pool."""

    place: Callable[[str], Awaitable[Where]]
    create: Callable[[str, ComputeConfig, dict[str, str], HostLink], Awaitable[InstanceInfo]]
    links: Sequence[HostLink]
    channels: ChannelPool

    async def take(self, instance_id: str, snapshot_id: str) -> int | None:
        at = await self.place(instance_id)
        out = await _on_instance(at, _TAKE, "snapshot", snapshot_id)
        size = out.decode(errors="replace").strip()
        return int(size) if size.isdigit() else None

    async def create_from(
        self, instance_id: str, cfg: ComputeConfig, labels: dict[str, str], snapshot_id: str
    ) -> InstanceInfo:
        link = await self._holder(snapshot_id)
        info = await self.create(instance_id, cfg, labels, link)
        await self.restore(instance_id, snapshot_id)
        return info

    async def restore(self, instance_id: str, snapshot_id: str) -> InstanceInfo:
        at = await self.place(instance_id)
        await _on_instance(at, _RESTORE, "restore", snapshot_id)
        self.channels.drop(instance_id)  # its helper was ended with every process of the instance
        return at.info(paused=await is_paused(at))

    async def remove(self, snapshot_id: str) -> bool:
        unreachable: ProviderUnavailableError | None = None
        for link in self.links:  # an archive is on one host: a pool's other hosts may be down
            try:
                if await _remove_on(link, snapshot_id):
                    return True
            except ProviderUnavailableError as exc:
                unreachable = exc
        if unreachable is not None:  # it may be there: not said to be gone
            raise unreachable
        return False

    async def held(self) -> list[str]:
        found: set[str] = set()
        for link in self.links:
            found.update(await run_blocking(_archived, link))
        return sorted(found)

    async def _holder(self, snapshot_id: str) -> HostLink:
        """The host that keeps the snapshot's archive; one sentence when none that answers does."""
        for link in self.links:
            with contextlib.suppress(ProviderUnavailableError):
                if snapshot_id in await run_blocking(_archived, link):
                    return link
        raise ProvisionError(_gone(snapshot_id), op="provision")


def _store(root: str) -> str:
    """Where the snapshots of the instances under ``root`` are kept."""
    return f"{root}/{_files.META}/{_STORE}"


async def _remove_on(link: HostLink, snapshot_id: str) -> bool:
    """Remove the snapshot's archive (and any partial one) from the host; whether it was there."""
    store = _store(await run_blocking(_files.instances_root, link))
    argv = ["sh", "-c", _REMOVE, "praisonai-remove-snapshot", store, snapshot_id]
    status, _, err = await run_blocking(link.run, shlex.join(argv))
    if status not in (0, 1):
        raise ExecError(
            f"could not remove snapshot {snapshot_id} on {link.host.label}: {_said(err)}",
            op="remove_snapshot",
        )
    return status == 0


def _archived(link: HostLink) -> list[str]:
    """The ids of the snapshots whose archives the host keeps (blocking)."""
    store = _store(_files.instances_root(link))
    with link.sftp() as sftp:
        try:
            names = sftp.listdir(store)
        except FileNotFoundError:
            return []
    return [match.group(1) for name in names if (match := _ARCHIVE.fullmatch(name))]


async def _on_instance(at: Where, script: str, op: str, snapshot_id: str) -> bytes:
    """Run ``script`` for the instance and the snapshot on the instance's host; its output, or
    one sentence saying why it failed."""
    store = posixpath.join(posixpath.dirname(at.meta), _STORE)
    argv = ["sh", "-c", script, f"praisonai-{op}", at.instance_id, at.workspace, at.meta, store, snapshot_id]
    status, out, err = await run_blocking(at.link.run, shlex.join(argv), ARCHIVE_TIMEOUT_S)
    if status == 0:
        return out
    where, said = at.link.host.label, _said(err)
    if status == 3:
        raise InstanceNotFoundError(f"no ssh instance {at.instance_id!r}", op=op)
    if status == 4:
        raise PathOutsideWorkspaceError(
            f"the workspace of {at.instance_id} on {where} is no longer a directory of its own (a "
            "link was put in its place); nothing was saved",
            op=op,
        )
    if status in (5, 6):
        raise ProvisionError(_gone(snapshot_id), op=op)
    if status == 7:
        raise ProvisionError(
            f"the archive of snapshot {snapshot_id} on {where} could not be unpacked, so nothing was "
            "restored (tar refuses a member that would land outside the workspace, as in an archive "
            f"tampered with; a full disk fails it too): {said}",
            op=op,
        )
    if status == 8:
        raise ProvisionError(f"snapshots on ssh need GNU tar on the host, and {where} has none", op=op)
    raise ProvisionError(f"could not {op} {at.instance_id} on {where}: {said}", op=op)


def _gone(snapshot_id: str) -> str:
    return (
        f"snapshot {snapshot_id} is recorded but its archive is gone from its host (or is not one "
        "file any more); remove it (praisonai.compute.remove_snapshot)"
    )


def _said(err: bytes) -> str:
    """What the host said, on one line (a member's name may hold a newline)."""
    return " ".join(err.decode(errors="replace").split())[:500] or "no message"
