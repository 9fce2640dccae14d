"""Where praisonai keeps its state on this machine, and the secret that names it.

A home is named by a key, not by its path: a random secret made on first use in
``$PRAISONAI_HOME/home.key`` (mode 0600), of which instances carry only a one-way hash, their
``praisonai.home`` label (:func:`home_tag`). So another home cannot take a home's instances for its
own by what it can read of them (labels, the home's path), nor by being made again at the same path
(a home deleted and remade, another machine's home of the same path on a shared engine). What it
is not: a boundary against the same OS user, who can read the key file (0600 keeps out other users
only), nor against anyone who can use the engine directly (``docker exec`` needs no praisonai).
"""

from __future__ import annotations

import errno
import hashlib
import os
import secrets
import sqlite3
import stat
from pathlib import Path

from praisonai._errors import HomeUnusableError


def home_path() -> Path:
    """``$PRAISONAI_HOME``, default ``~/.praisonai``, as it is (not created, not checked)."""
    return Path(os.environ.get("PRAISONAI_HOME") or Path.home() / ".praisonai")


def praisonai_home() -> Path:
    """The home, created on first use, owner-only (0700: it holds the ledger, warm instances'
    handoff keys among it); an existing home keeps the mode its owner gave it.

    Raises:
        HomeUnusableError: it cannot be created, is not a directory, or is not writable; the
            message names the path and what to do.
    """
    home = home_path()
    try:
        home.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise HomeUnusableError(unusable_home(home, exc.strerror or str(exc)), op="home") from exc
    if not os.access(home, os.W_OK | os.X_OK):  # also a read-only mount, which root cannot write either
        raise HomeUnusableError(unusable_home(home, "it is not writable"), op="home")
    return home


def unusable_home(home: Path, why: str) -> str:
    """One sentence: which home, why it cannot be used, and what to do."""
    which = "PRAISONAI_HOME" if os.environ.get("PRAISONAI_HOME") else "the praisonai home"
    why = why[:1].lower() + why[1:]
    return f"{which} {home} cannot be used ({why}); set PRAISONAI_HOME to a writable directory"


# sqlite's primary result codes (https://sqlite.org/rescode.html), which typeshed does not list
_SQLITE_IOERR, _SQLITE_FULL = 10, 13


def disk_full(exc: BaseException, where: Path) -> bool:
    """Whether ``exc``, raised writing under ``where``, means the disk there is full: ``ENOSPC`` or
    ``EDQUOT``, sqlite's "database or disk is full", or its bare "disk I/O error" on a file system
    with no space left (what sqlite says when its WAL or shared-memory file cannot grow)."""
    if isinstance(exc, OSError):
        return exc.errno in (errno.ENOSPC, errno.EDQUOT)
    if not isinstance(exc, sqlite3.Error):
        return False
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF  # the primary code of an extended one
    if code == _SQLITE_FULL or "disk is full" in str(exc):
        return True
    return (code == _SQLITE_IOERR or "disk I/O error" in str(exc)) and no_space(where)


def no_space(where: Path) -> bool:
    """Whether the file system holding ``where`` has no block left for this user."""
    try:
        return os.statvfs(where).f_bavail == 0
    except OSError:
        return False


def full_home(home: Path, what: str) -> str:
    """One sentence for a full disk under the home: which, what could not be written, what to do."""
    which = "PRAISONAI_HOME" if os.environ.get("PRAISONAI_HOME") else "the praisonai home"
    return (
        f"the disk holding {which} {home} is full, so {what} could not be written; free some space "
        "on it, or set PRAISONAI_HOME to a directory on another disk"
    )


#: The file in a home that holds the secret naming it (see the module docstring).
KEY_FILE = "home.key"
_KEY_HEX = 64  # 32 random bytes, hex


def home_tag(home: Path | None = None) -> str:
    """The name instances carry of the home that made them (default: the current
    ``$PRAISONAI_HOME``): 32 hex digits of the SHA-256 of the home's key, which is made on first
    use. ``gc`` removes only its home's instances, and only its home may use them
    (``compute.lifecycle.check_home``).

    Raises:
        HomeUnusableError: the home, or its key file, cannot be used (one sentence: what to do).
    """
    key = _home_key(praisonai_home() if home is None else _made(home))
    return hashlib.sha256(b"praisonai home\0" + key).hexdigest()[:32]


def _made(home: Path) -> Path:
    try:
        home.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise HomeUnusableError(unusable_home(home, exc.strerror or str(exc)), op="home") from exc
    return home


def _home_key(home: Path) -> bytes:
    """The home's key, made now if it has none: written whole to a fresh file, then linked under
    its name, which never replaces a key another process made meanwhile (that one is used)."""
    path = home / KEY_FILE
    try:
        return _read_key(path)
    except FileNotFoundError:
        pass
    fresh = home / f".{KEY_FILE}.{secrets.token_hex(8)}"
    try:
        fd = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, secrets.token_hex(_KEY_HEX // 2).encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(fresh, path)
        except FileExistsError:
            pass
        finally:
            os.unlink(fresh)
        return _read_key(path)
    except HomeUnusableError:
        raise
    except OSError as exc:
        why = f"its key file {path.name} cannot be made: {exc.strerror or exc}"
        raise HomeUnusableError(unusable_home(home, why), op="home") from exc


def _read_key(path: Path) -> bytes:
    """The key in ``path``: a regular file of this user's, readable by no one else, holding one.

    Raises:
        FileNotFoundError: there is none yet.
        HomeUnusableError: it is something else (one sentence: what to do).
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        raise
    except OSError as exc:  # a link (ELOOP), no permission
        raise _bad_key(path, f"cannot be read ({exc.strerror or exc})") from exc
    try:
        info = os.fstat(fd)
        why = None
        if not stat.S_ISREG(info.st_mode):
            why = "is not a regular file"
        elif info.st_uid != os.geteuid():
            why = "belongs to another user"
        elif info.st_mode & 0o077:
            why = f"is readable or writable by others (chmod 600 {path})"
        key = os.read(fd, _KEY_HEX + 1) if why is None else b""
    finally:
        os.close(fd)
    if why is None and (len(key) != _KEY_HEX or not all(c in b"0123456789abcdef" for c in key)):
        why = "is damaged"
    if why is not None:
        raise _bad_key(path, why)
    return key


def _bad_key(path: Path, why: str) -> HomeUnusableError:
    return HomeUnusableError(
        f"the key of the praisonai home, {path}, {why}: it names the home (its instances carry its "
        "hash), so praisonai does not replace it; fix it, or use another PRAISONAI_HOME",
        op="home",
    )
