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
import shutil
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from praisonai._errors import PathNotFoundError, PathOutsideWorkspaceError
from praisonai._transfer import sftp_callback
from praisonai.compute._tar import refuse_links_out
from praisonai.compute.providers.ssh._fetch import fetch
from praisonai.compute.providers.ssh._link import HostLink
from praisonai.runtime.partial import partial_beside

if TYPE_CHECKING:
    import paramiko

META = ".praisonai"
#: The free KiB of the file system holding "$1" (its deepest existing directory).
_FREE_KIB = 'p=$1; while [ ! -e "$p" ]; do p=${p%/*}; done; df -Pk -- "${p:-/}" | awk \'NR==2 {print $4}\''
#: A file system with less free than this when a write fails is full (reserved blocks, metadata).
_FULL_BELOW_KIB = 256
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
            try:
                _makedirs(sftp, root, root)
                _makedirs(sftp, f"{root}/{META}", root, mode=0o700)
            except (FileNotFoundError, PermissionError, NotADirectoryError):
                raise
            except OSError as exc:  # SFTP's "Failure": a full disk, said as one
                raise _write_failed(link, root, "the instances root", exc) from None
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
        try:
            sftp.mkdir(workspace, 0o700)
            sftp.mkdir(meta, 0o700)
            _write_private(sftp, f"{meta}/env", lines.encode())
            _write_private(sftp, f"{meta}/instance.json", json.dumps(record).encode())
        except (FileNotFoundError, PermissionError):
            raise
        except OSError as exc:
            for made in (f"{meta}/env", f"{meta}/instance.json"):
                with contextlib.suppress(OSError):
                    sftp.remove(made)
            for made in (meta, workspace):
                with contextlib.suppress(OSError):
                    sftp.rmdir(made)
            raise _write_failed(link, workspace, "the new instance", exc) from None


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
    _check_written(sftp, path, len(data))


def _check_written(sftp: paramiko.SFTPClient, path: str, size: int) -> None:
    """SFTP's pipelined writes can be refused (a full disk) without the close saying so: the size
    on the host is the proof that every byte arrived."""
    if sftp.stat(path).st_size != size:
        raise OSError(f"the host kept {sftp.stat(path).st_size} of {size} bytes")


def _write_failed(link: HostLink, where: str, shown: str, exc: OSError) -> OSError:
    """A write the host refused for a generic reason (SFTP says only "Failure"), as one sentence:
    "no space left" when the file system holding ``where`` is full (``df``), else the reason."""
    try:
        status, out, _ = link.run(shlex.join(["sh", "-c", _FREE_KIB, "praisonai-df", where]))
        free = int(out.decode().strip()) if status == 0 and out.decode().strip().isdigit() else None
    except Exception:  # no verdict on the disk: the SFTP reason stands
        free = None
    if free is not None and free < _FULL_BELOW_KIB:
        return OSError(
            f"no space left on {link.host.label} for {shown} ({free} KiB free where {where} is): "
            "free some space on the host and try again"
        )
    return OSError(f"cannot write {shown} on {link.host.label}: {exc}")


# ---- reads and writes --------------------------------------------------------------------------


def write(link: HostLink, path: str, data: bytes, shown: str, workspace: str) -> None:
    """Write exactly ``data`` to a new file beside ``path``, renamed over it (``posix-rename``),
    so a reader sees the old or the new file, never a mix of two writers; a replaced file keeps
    its mode, a link at ``path`` is replaced (never written through), and a link among its
    parents below ``workspace`` refuses the write. Missing parents are made only when the first
    open says so. A refused write (a full disk) raises ``OSError`` and leaves no file."""
    partial = partial_beside(path)
    with link.sftp() as sftp:
        refuse_links(sftp, workspace, path, shown)
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
            _check_written(sftp, partial, len(data))
            sftp.posix_rename(partial, path)
        except OSError as exc:
            # judged before the partial file goes: it is what filled the disk
            refused = exc if isinstance(exc, PermissionError) else _write_failed(link, path, shown, exc)
            with contextlib.suppress(OSError):
                sftp.remove(partial)
            raise refused from None
        except BaseException:
            with contextlib.suppress(OSError):
                sftp.remove(partial)
            raise


def refuse_links(sftp: paramiko.SFTPClient, workspace: str, path: str, shown: str) -> None:
    """Refuse ``path`` when a directory on its way down from ``workspace`` is a symbolic link:
    the instance's commands may plant one to lead a write out of the workspace. (A link made
    between this check and the write can still be followed: SFTP has no openat.)"""
    below = posixpath.relpath(posixpath.dirname(path), workspace)
    current = workspace
    for part in [] if below == "." else below.split("/"):
        current = f"{current}/{part}"
        try:
            mode = sftp.lstat(current).st_mode or 0
        except FileNotFoundError:
            return  # made by us, below
        if stat.S_ISLNK(mode):
            where = posixpath.relpath(current, workspace)
            raise PathOutsideWorkspaceError(
                f"{shown}: {where} is a symbolic link in the instance; writes and uploads do not "
                "follow links (write to the path it leads to instead)",
                op="write",
            )


def _replaced_mode(sftp: paramiko.SFTPClient, path: str, shown: str) -> int | None:
    """The permission bits of the regular file that ``path`` replaces (None: nothing to keep)."""
    try:
        mode = sftp.lstat(path).st_mode or 0
    except (FileNotFoundError, PermissionError):
        return None
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(f"{shown} is a directory")
    return stat.S_IMODE(mode) if stat.S_ISREG(mode) else None


def upload(link: HostLink, local: Path, remote: str, workspace: str) -> None:
    """Copy ``local`` (a file or a tree) to ``remote``. A file whose name is new is created
    exclusively (``O_EXCL``: a link planted there meanwhile is not followed); one that replaces
    an entry goes through a new file renamed into place (a link there is replaced). Every
    directory is a real one (a link there refuses the upload)."""
    with link.sftp() as sftp:
        refuse_links(sftp, workspace, remote, remote)
        if not local.is_dir():
            _makedirs(sftp, posixpath.dirname(remote), remote)
            _put_whole(sftp, local, remote)
            return
        present = {remote: _real_dir(sftp, workspace, remote, remote)}
        for top, dirs, files in os.walk(local):
            target = posixpath.join(remote, Path(top).relative_to(local).as_posix()).rstrip("/.") or remote
            for name in dirs + files:
                source, dest = Path(top, name), posixpath.join(target, name)
                if source.is_symlink():
                    sftp.symlink(os.readlink(source), dest)
                elif source.is_dir():
                    present[dest] = _real_dir(sftp, workspace, dest, remote)
                elif name in present[target] or not _put_new(sftp, source, dest):
                    _put_whole(sftp, source, dest)


def _real_dir(sftp: paramiko.SFTPClient, workspace: str, path: str, shown: str) -> set[str]:
    """``path`` as a directory of its own: made when missing, refused when it is a link. The
    names it holds (none when made)."""
    try:
        mode = sftp.lstat(path).st_mode or 0
    except FileNotFoundError:
        _makedirs(sftp, path, shown)
        return set()
    if stat.S_ISLNK(mode):
        refuse_links(sftp, workspace, f"{path}/-", shown)
    if not stat.S_ISDIR(mode):
        raise NotADirectoryError(f"{posixpath.relpath(path, workspace)} in {shown} is not a directory")
    return set(sftp.listdir(path))


def _put_new(sftp: paramiko.SFTPClient, local: Path, path: str) -> bool:
    """``local`` to ``path`` created exclusively; False when something is there already (made
    since the directory was listed: the caller replaces it)."""
    try:
        remote = sftp.open(path, "wbx")
    except OSError:
        return False
    size, progressed, sent = local.stat().st_size, sftp_callback(), 0
    try:
        with remote, local.open("rb") as source:
            remote.set_pipelined(True)
            while chunk := source.read(1 << 15):
                remote.write(chunk)
                sent += len(chunk)
                progressed(sent, size)
        _check_written(sftp, path, sent)
    except BaseException:
        with contextlib.suppress(OSError):
            sftp.remove(path)
        raise
    return True


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
    except those leading out of it: then the download is refused and nothing of it is left
    (the tree arrives in a directory beside ``local``, moved into place once judged; links are
    judged once all are known, as one link can make another leave the tree)."""
    with link.sftp() as sftp:
        try:
            info = sftp.stat(remote)
        except FileNotFoundError:
            raise PathNotFoundError(
                f"no such file or directory in the instance: {shown}", op="download"
            ) from None
        if not stat.S_ISDIR(info.st_mode or 0):
            local.parent.mkdir(parents=True, exist_ok=True)
            arriving_file = Path(partial_beside(str(local)))
            try:  # a download cut short leaves the file that was there, not half of the new one
                with arriving_file.open("wb") as sink:
                    fetch(sftp, remote, sink, sftp_callback())
                arriving_file.replace(local)
            finally:
                arriving_file.unlink(missing_ok=True)
            return
        local.parent.mkdir(parents=True, exist_ok=True)
        arriving = Path(tempfile.mkdtemp(prefix=f".{local.name}.", dir=local.parent))
        try:
            links: dict[str, str] = {}
            _download_tree(sftp, remote, arriving, "", links)
            refuse_links_out(arriving, links, shown)
            if local.exists():
                shutil.copytree(arriving, local, symlinks=True, dirs_exist_ok=True)
            else:
                arriving.chmod(0o777 & ~_umask())
                arriving.rename(local)
        finally:
            shutil.rmtree(arriving, ignore_errors=True)


def _umask() -> int:
    """The process's umask, read without setting it (os.umask would, for every thread at once)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    return 0o022


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
            with dest.open("wb") as sink:
                fetch(sftp, source, sink, sftp_callback())


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
