"""Resolve and open a path beneath a directory fd in one step, never following a symbolic link.

The workspace is the instance's: its commands can swap a directory for a link at any moment, so
a path checked first and opened again later can land on the host. Every open here starts at a
directory fd and refuses any link on the way: ``openat2`` with ``RESOLVE_BENEATH |
RESOLVE_NO_SYMLINKS`` where the kernel has it (5.6+), else a walk of ``O_NOFOLLOW |
O_DIRECTORY`` opens, one component at a time. Links inside the workspace are refused too, even
those pointing inside it (the instance controls them, so following one is never safe to decide).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import posixpath
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from praisonai._errors import PathNotFoundError, PathOutsideWorkspaceError

_SYS_OPENAT2 = 437  # one number on every Linux architecture but alpha (which we do not run on)
_RESOLVE_NO_MAGICLINKS, _RESOLVE_NO_SYMLINKS, _RESOLVE_BENEATH = 0x02, 0x04, 0x08
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_have_openat2: bool | None = None if sys.platform == "linux" else False  # None: unknown until the first call


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


def relative_parts(path: str, shown: str) -> list[str]:
    """``path`` (relative to the directory) as its components; ``..`` climbing out is refused."""
    normal = posixpath.normpath(path)
    if normal.startswith("/") or normal == ".." or normal.startswith("../"):
        raise PathOutsideWorkspaceError(f"{shown} is outside the instance workspace", op="path")
    return [] if normal == "." else normal.split("/")


def open_beneath(dir_fd: int, parts: list[str], flags: int, shown: str, mode: int = 0o666) -> int:
    """An fd for ``parts`` beneath ``dir_fd``; a link anywhere on the way is refused.

    Raises:
        PathOutsideWorkspaceError: a component is a symbolic link.
        OSError: anything else the open said (``FileNotFoundError``, ``NotADirectoryError``, ...).
    """
    flags |= os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        if not parts:
            return os.open(".", flags, dir_fd=dir_fd)
        fd = _openat2(dir_fd, "/".join(parts), flags, mode)
        if fd is not None:
            return fd
        with _walk(dir_fd, parts[:-1]) as parent:
            return os.open(parts[-1], flags, mode, dir_fd=parent)
    except NotADirectoryError as exc:  # O_DIRECTORY on a link says ENOTDIR, not ELOOP
        linked = OSError(errno.ELOOP, os.strerror(errno.ELOOP))
        raise _refusal(linked if _passes_a_link(dir_fd, parts) else exc, shown) from None
    except OSError as exc:
        raise _refusal(exc, shown) from None


def _passes_a_link(dir_fd: int, parts: list[str]) -> bool:
    """Whether a component of ``parts`` is a link (only to word an error: nothing is opened)."""
    for end in range(1, len(parts) + 1):
        try:
            if stat.S_ISLNK(os.stat("/".join(parts[:end]), dir_fd=dir_fd, follow_symlinks=False).st_mode):
                return True
        except OSError:
            return False
    return False


def open_dir(dir_fd: int, parts: list[str], shown: str, *, create: bool = False) -> int:
    """A directory fd for ``parts`` beneath ``dir_fd``, made (``mkdirat``) where missing if ``create``."""
    if not create:
        return open_beneath(dir_fd, parts, os.O_RDONLY | os.O_DIRECTORY, shown)
    current = os.dup(dir_fd)
    try:
        for name in parts:
            with contextlib.suppress(FileExistsError):  # a directory, or a link the open refuses
                os.mkdir(name, 0o777, dir_fd=current)
            following = open_beneath(current, [name], os.O_RDONLY | os.O_DIRECTORY, shown)
            os.close(current)
            current = following
    except BaseException:
        os.close(current)
        raise
    return current


@contextmanager
def opened(fd: int) -> Iterator[int]:
    """Close ``fd`` when the block ends."""
    try:
        yield fd
    finally:
        os.close(fd)


def _openat2(dir_fd: int, path: str, flags: int, mode: int) -> int | None:
    """``openat2`` beneath ``dir_fd`` with no links, or None where the kernel has no openat2."""
    global _have_openat2
    if _have_openat2 is False:
        return None
    how = _OpenHow(
        flags,
        mode if flags & os.O_CREAT else 0,
        _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS,
    )
    fd = _libc().syscall(_SYS_OPENAT2, dir_fd, path.encode(), ctypes.byref(how), ctypes.sizeof(how))
    if fd >= 0:
        _have_openat2 = True
        return int(fd)
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EPERM) and not _have_openat2:  # no openat2, or seccomp forbids it
        _have_openat2 = False
        return None
    raise OSError(code, os.strerror(code), path)


@contextmanager
def _walk(dir_fd: int, parts: list[str]) -> Iterator[int]:
    """The directory ``parts`` beneath ``dir_fd``, each component opened without following a link."""
    current = os.dup(dir_fd)
    try:
        for name in parts:
            following = os.open(name, _DIR, dir_fd=current)
            os.close(current)
            current = following
        yield current
    finally:
        os.close(current)


def _refusal(exc: OSError, shown: str) -> OSError:
    """The error a caller sees for a failed open: a link on the way is named as such."""
    if exc.errno in (errno.ELOOP, errno.EXDEV):
        return PathOutsideWorkspaceError(
            f"{shown} passes through a symbolic link; file operations never follow links in the "
            "workspace (use the link's target path instead)",
            op="path",
        )
    if exc.errno == errno.ENOTDIR and isinstance(exc, NotADirectoryError):
        return NotADirectoryError(f"a parent of {shown} is not a directory (or is a symbolic link)")
    if isinstance(exc, FileNotFoundError):
        return PathNotFoundError(f"no such file or directory in the instance: {shown}", op="path")
    return exc


_LIBC: ctypes.CDLL | None = None


def _libc() -> ctypes.CDLL:
    global _LIBC
    if _LIBC is None:
        _LIBC = ctypes.CDLL(None, use_errno=True)
    return _LIBC
