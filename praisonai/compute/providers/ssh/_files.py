"""Files on an SSH host over reused SFTP sessions: instance records, writes and trees.

Every function blocks (call it from a worker thread) and maps SFTP failures onto the error tree:
``PathNotFoundError``, ``IsADirectoryError``, ``NotADirectoryError``, ``PermissionError``.
"""

from __future__ import annotations

import contextlib
import json
import os
import posixpath
import re
import shlex
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from praisonai._errors import PathNotFoundError, PathOutsideWorkspaceError
from praisonai._transfer import sftp_callback
from praisonai.compute._tar import refuse_links_out
from praisonai.compute.providers.ssh._link import HostLink
from praisonai.runtime.partial import partial_beside

if TYPE_CHECKING:
    import paramiko

META = ".praisonai"
_INSTANCE_ID = re.compile(r"ssh_[0-9a-f]{12}")


def is_instance_id(text: str) -> bool:
    return _INSTANCE_ID.fullmatch(text) is not None


def instances_root(link: HostLink) -> str:
    """The host's instances root as an absolute path, created (with its private meta dir) once."""
    if not link.root:
        with link.sftp() as sftp:
            root = link.host.root
            if not root.startswith("/"):
                root = posixpath.join(sftp.normalize("."), root)
            _makedirs(sftp, root, root)
            _makedirs(sftp, f"{root}/{META}", root, mode=0o700)
        link.root = root
    return link.root


def instance_ids(link: HostLink) -> list[str]:
    """Every instance recorded on the host, by any process."""
    root = instances_root(link)
    with link.sftp() as sftp:
        try:
            return sorted(n for n in sftp.listdir(f"{root}/{META}") if is_instance_id(n))
        except FileNotFoundError:
            return []


def create_instance(
    link: HostLink, workspace: str, meta: str, env: Mapping[str, str], record: Mapping[str, Any]
) -> None:
    """Make the workspace and the meta dir; write env (0600, before any value is in it) and, last,
    instance.json: once that exists, the instance does."""
    lines = "".join(f"{name}={shlex.quote(value)}\n" for name, value in env.items())
    with link.sftp() as sftp:
        sftp.mkdir(workspace, 0o700)
        sftp.mkdir(meta, 0o700)
        _write_private(sftp, f"{meta}/env", lines.encode())
        _write_private(sftp, f"{meta}/instance.json", json.dumps(record).encode())


def read_record(link: HostLink, meta: str) -> dict[str, Any] | None:
    """The instance's instance.json, or None when it does not exist."""
    with link.sftp() as sftp:
        try:
            with sftp.open(f"{meta}/instance.json", "rb") as f:
                return dict(json.loads(f.read()))
        except FileNotFoundError:
            return None


def _write_private(sftp: paramiko.SFTPClient, path: str, data: bytes) -> None:
    with sftp.open(path, "wb") as f:
        f.chmod(0o600)
        f.write(data)


# ---- reads and writes --------------------------------------------------------------------------


def write(link: HostLink, path: str, data: bytes, shown: str) -> None:
    """Write exactly ``data`` to a new file beside ``path``, renamed over it (``posix-rename``),
    so a reader sees the old or the new file, never a mix of two writers; a replaced file keeps
    its mode. Missing parents are made only when the first open says so."""
    partial = partial_beside(path)
    with link.sftp() as sftp:
        mode = _replaced_mode(sftp, path, shown)
        try:
            f = sftp.open(partial, "wbx")
        except FileNotFoundError:
            _makedirs(sftp, posixpath.dirname(path), shown)
            f = sftp.open(partial, "wbx")
        except OSError as exc:
            raise _refusal(sftp, path, shown, exc) from None
        try:
            with f:
                f.set_pipelined(True)
                f.write(data)
                if mode is not None:
                    f.chmod(mode)
            sftp.posix_rename(partial, path)
        except BaseException:
            with contextlib.suppress(OSError):
                sftp.remove(partial)
            raise


def _replaced_mode(sftp: paramiko.SFTPClient, path: str, shown: str) -> int | None:
    """The permission bits of the regular file that ``path`` replaces (None: nothing to keep)."""
    try:
        mode = sftp.lstat(path).st_mode or 0
    except (FileNotFoundError, PermissionError):
        return None
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(f"{shown} is a directory")
    return stat.S_IMODE(mode) if stat.S_ISREG(mode) else None


def upload(link: HostLink, local: Path, remote: str) -> None:
    with link.sftp() as sftp:
        if not local.is_dir():
            _makedirs(sftp, posixpath.dirname(remote), remote)
            _put_whole(sftp, local, remote)
            return
        _makedirs(sftp, remote, remote)
        for top, dirs, files in os.walk(local):
            target = posixpath.join(remote, Path(top).relative_to(local).as_posix()).rstrip("/.") or remote
            for name in dirs + files:
                source, dest = Path(top, name), posixpath.join(target, name)
                if source.is_symlink():
                    sftp.symlink(os.readlink(source), dest)
                elif source.is_dir():
                    _makedirs(sftp, dest, remote)
                else:
                    sftp.put(str(source), dest, callback=sftp_callback(), confirm=False)


def _put_whole(sftp: paramiko.SFTPClient, local: Path, path: str) -> None:
    """``local`` to a new file beside ``path``, renamed over it as :func:`write` does (a put cut
    short leaves the old file; a link at ``path`` is replaced, never written through)."""
    mode = _replaced_mode(sftp, path, path)
    partial = partial_beside(path)
    try:
        sftp.put(str(local), partial, callback=sftp_callback(), confirm=False)
        if mode is not None:
            sftp.chmod(partial, mode)
        sftp.posix_rename(partial, path)
    except BaseException:
        with contextlib.suppress(OSError):
            sftp.remove(partial)
        raise


def download(link: HostLink, remote: str, local: Path, shown: str) -> None:
    """Copy the instance's file or tree to ``local``. Links in the tree are copied as links,
    except those leading out of it: they are removed again and the download refused (links
    are judged once all are known, as one link can make another leave the tree)."""
    with link.sftp() as sftp:
        try:
            info = sftp.stat(remote)
        except FileNotFoundError:
            raise PathNotFoundError(
                f"no such file or directory in the instance: {shown}", op="download"
            ) from None
        if not stat.S_ISDIR(info.st_mode or 0):
            local.parent.mkdir(parents=True, exist_ok=True)
            sftp.get(remote, str(local), callback=sftp_callback())
            return
        links: dict[str, str] = {}
        _download_tree(sftp, remote, local, "", links)
    refuse_links_out(local, links, shown)


def _download_tree(
    sftp: paramiko.SFTPClient, remote: str, local: Path, below: str, links: dict[str, str]
) -> None:
    local.mkdir(parents=True, exist_ok=True)
    for entry in sftp.listdir_attr(remote):
        name = entry.filename
        if "/" in name or name in ("", ".", ".."):  # a name the server should never send
            raise PathOutsideWorkspaceError(f"the SSH host listed an impossible name {name!r}", op="download")
        source, dest, where = posixpath.join(remote, name), local / name, posixpath.join(below, name)
        mode = entry.st_mode or 0
        if stat.S_ISLNK(mode):
            links[where] = sftp.readlink(source) or ""
            os.symlink(links[where], dest)
        elif stat.S_ISDIR(mode):
            _download_tree(sftp, source, dest, where, links)
        else:
            sftp.get(source, str(dest), callback=sftp_callback())


def _makedirs(sftp: paramiko.SFTPClient, path: str, shown: str, mode: int = 0o755) -> None:
    """``mkdir -p`` over SFTP: one stat when the directory exists."""
    try:
        info = sftp.stat(path)
    except FileNotFoundError:
        _makedirs(sftp, posixpath.dirname(path), shown, mode)
        try:
            sftp.mkdir(path, mode)
        except OSError:
            if not stat.S_ISDIR(sftp.stat(path).st_mode or 0):  # made by someone else meanwhile: fine
                raise
        return
    if not stat.S_ISDIR(info.st_mode or 0):
        raise NotADirectoryError(f"a parent of {shown} is not a directory")


def _refusal(sftp: paramiko.SFTPClient, path: str, shown: str, exc: OSError) -> OSError:
    """The reason an open for writing failed, as the builtin error a caller would catch."""
    if isinstance(exc, PermissionError):
        return PermissionError(f"permission denied: {shown}")
    try:
        if stat.S_ISDIR(sftp.stat(path).st_mode or 0):
            return IsADirectoryError(f"{shown} is a directory")
    except OSError:
        pass
    return OSError(f"cannot write {shown}: {exc}")
