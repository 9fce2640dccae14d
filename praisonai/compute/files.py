"""The file API every provider has: list, exists, remove, rename, mkdir and stat.

The generic implementation runs one POSIX-sh script INSIDE the instance through ``execute``, so
a path is resolved where the instance's own files are, never through a host path the instance
could swap. It uses only ``find -P`` (GNU ``-printf``), ``rm``, ``mv -T``, ``mkdir`` and ``chmod``: links
are reported, removed and renamed as links and never followed. Entries come back NUL-framed (a
name can hold a newline, never a NUL), so no file name can forge another entry. Where the
instance is a directory on a host (ssh), its ``root`` names it and the script refuses any
path whose parent resolves outside it. That script is the generic files part
(:class:`ShellFiles`, the default ``file_tree``); a provider with native calls (local's fd walk,
vendor SDKs) holds its own.
"""

from __future__ import annotations

import builtins
import posixpath
import shlex
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from praisonai import _limits
from praisonai._errors import ConfigError, ExecError, PathNotFoundError, PathOutsideWorkspaceError
from praisonai._types import ExecResult, FileEntry
from praisonai.compute import _activity, requests

# Exit codes of _SCRIPT, each one error the caller sees (see _raise).
_MISSING, _NOT_DIR, _EXISTS, _OUTSIDE, _NO_FIND, _IS_ROOT, _IS_DIR = 3, 4, 5, 6, 7, 8, 9
_FIELDS = 6  # %y %s %m %T@ %l %p
_TYPES = {"f": "file", "d": "dir", "l": "symlink"}

_SCRIPT = r"""
op=$1 root=$2 p=$3
fmt='%y\0%s\0%m\0%T@\0%l\0%p\0'
inside() {  # the parent of $1 resolved (links followed) must be $root or below it
  [ -z "$root" ] || [ "$1" = "$root" ] && return 0
  case $1 in */*) d=${1%/*};; *) d=.;; esac
  r=$(realpath -m -- "${d:-/}" && echo x) || exit 6
  r=${r%?x}
  case $r in "$root"|"$root"/*) return 0;; esac
  exit 6
}
there() { [ -e "$1" ] || [ -L "$1" ]; }
inside "$p"
case $op in remove|rename) [ "$p" != "$root" ] || exit 8;; esac
case $op in
exists) there "$p" || exit 3;;
stat) there "$p" || exit 3; find -P "$p" -maxdepth 0 -printf "$fmt" || exit 7;;
list) there "$p" || exit 3; { [ -d "$p" ] && [ ! -L "$p" ]; } || exit 4
  find -P "$p" -maxdepth 0 -printf '' 2>/dev/null || exit 7
  find -P "$p" -mindepth 1 -maxdepth "$4" -printf "$fmt";;
remove) there "$p" || exit 3; rm -rf -- "$p";;
rename) inside "$4"; there "$p" || exit 3; mv -T -- "$p" "$4";;
place) inside "$4"; if [ -d "$4" ]; then rm -f -- "$p"; exit 9; fi
  [ ! -f "$4" ] || chmod --reference="$4" -- "$p" 2>/dev/null || chmod "$(stat -c %a -- "$4")" -- "$p"
  mv -fT -- "$p" "$4" || { rm -f -- "$p"; exit 1; };;
mkdir) if [ -d "$p" ] && [ ! -L "$p" ]; then [ "$5" = 1 ] || exit 5; exit 0; fi
  there "$p" && exit 5
  if [ "$4" = 1 ]; then mkdir -p -- "$p"; else mkdir -- "$p"; fi;;
esac
"""


class FileTree(Protocol):
    """A provider's files part (``file_tree``), which the public file API (:class:`Files`) calls
    once the id and paths are checked. :class:`ShellFiles` is the generic one; a provider with native
    calls holds its own (local's fd walk, E2B's and Daytona's daemons, falling back to the
    script where theirs break the contract). Errors as the class docstring of :class:`Files`."""

    async def entries(self, instance_id: str, path: str, depth: int) -> list[FileEntry]: ...
    async def exists(self, instance_id: str, path: str) -> bool: ...
    async def stat(self, instance_id: str, path: str) -> FileEntry: ...
    async def remove(self, instance_id: str, path: str) -> None: ...
    async def rename(self, instance_id: str, source: str, target: str) -> None: ...
    async def make_dir(self, instance_id: str, path: str, parents: bool, exist_ok: bool) -> None: ...


#: An instance path as the script inside the instance names it: ``(instance_id, path) -> path``.
PathMapper = Callable[[str, str], Awaitable[str]]


class ShellFiles:
    """The generic files part: one POSIX-sh script inside the instance through ``execute`` (the
    provider's public one). ``target`` maps an instance path to the script's (a channel
    provider's own mapping; by default a relative path gets ``./`` so no name reads as an
    option); ``root`` names the instance's directory on a host that the script must stay in
    (ssh), or gives "" where the instance is a machine or container of its own."""

    def __init__(
        self,
        execute: Callable[..., Awaitable[ExecResult]],
        *,
        target: PathMapper | None = None,
        root: Callable[[str], Awaitable[str]] | None = None,
    ) -> None:
        self._execute, self._target_of, self._root_of = execute, target, root

    async def entries(self, instance_id: str, path: str, depth: int) -> list[FileEntry]:
        return await self._script(instance_id, "list", path, str(depth))

    async def exists(self, instance_id: str, path: str) -> bool:
        try:
            await self._script(instance_id, "exists", path)
        except PathNotFoundError:
            return False
        return True

    async def stat(self, instance_id: str, path: str) -> FileEntry:
        return (await self._script(instance_id, "stat", path))[0]

    async def remove(self, instance_id: str, path: str) -> None:
        await self._script(instance_id, "remove", path)

    async def rename(self, instance_id: str, source: str, target: str) -> None:
        await self._script(instance_id, "rename", source, await self._target(instance_id, target))

    async def make_dir(self, instance_id: str, path: str, parents: bool, exist_ok: bool) -> None:
        await self._script(instance_id, "mkdir", path, str(int(parents)), str(int(exist_ok)))

    async def place(self, instance_id: str, partial: str, path: str) -> None:
        """Put the whole file ``partial`` (``praisonai.runtime.partial``) in the place of ``path``
        in one step (``mv``: a file or link there is replaced), keeping a replaced file's mode;
        ``partial`` is removed when it cannot be. The end of a write for a provider whose file API
        writes in place and cannot rename over a file; errors name ``path``."""
        await self._script(instance_id, "place", partial, await self._target(instance_id, path), shown=path)

    async def _target(self, instance_id: str, path: str) -> str:
        if self._target_of is not None:
            return await self._target_of(instance_id, path)
        return path if path.startswith("/") else "./" + (path or ".")

    async def _script(
        self, instance_id: str, op: str, path: str, *args: str, shown: str | None = None
    ) -> list[FileEntry]:
        target = await self._target(instance_id, path)
        root = "" if self._root_of is None else await self._root_of(instance_id)
        argv = ["sh", "-c", _SCRIPT, "praisonai-files", op, root, target, *args]
        result = await self._execute(
            instance_id,
            shlex.join(argv),
            timeout=_limits.FILE_OP_TIMEOUT_S,
            max_output=_limits.FILE_LIST_MAX_BYTES,
        )
        _raise(result, "write_file" if op == "place" else op, path if shown is None else shown)
        return _entries(result.stdout, target, posixpath.normpath(path or "."))


class Files:
    """The public file API of a provider's instances (``provider.files``), shaped as a sandbox's
    ``sb.files``: ``list``, ``exists``, ``stat``, ``remove``, ``rename``, ``mkdir``. Every path is
    an instance path: relative ones start at the instance's working dir. Every call raises
    ``PathNotFoundError`` for a missing path, ``PathOutsideWorkspaceError`` for one that leaves the
    instance (also through a link) and ``ConfigError`` for bad input, each in one sentence. Built
    from the provider's :class:`FileTree` part, which does the work once ids and paths are checked,
    and its id check."""

    def __init__(self, tree: FileTree, check_id: Callable[[object], None]) -> None:
        self._tree, self._check_id = tree, check_id

    async def list(self, instance_id: str, path: str = ".", *, depth: int = 1) -> builtins.list[FileEntry]:
        """The entries under the directory ``path``, ``depth`` levels down (1: its children),
        each as ``lstat`` sees it, sorted by path; links are listed, never entered."""
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
            raise ConfigError(f"depth must be a whole number of levels, 1 or more, not {depth!r}", op="list")
        self._check(instance_id, "list", path)
        with _activity.in_use(instance_id):
            found = await self._tree.entries(instance_id, path, depth)
        return sorted(found, key=lambda entry: entry.path)  # one order on every provider

    async def exists(self, instance_id: str, path: str) -> bool:
        """Whether anything (a dangling link too) is at ``path``."""
        self._check(instance_id, "exists", path)
        with _activity.in_use(instance_id):
            return await self._tree.exists(instance_id, path)

    async def stat(self, instance_id: str, path: str) -> FileEntry:
        """What is at ``path``, as ``lstat`` sees it (a link is reported as a link)."""
        self._check(instance_id, "stat", path)
        with _activity.in_use(instance_id):
            return await self._tree.stat(instance_id, path)

    async def remove(self, instance_id: str, path: str) -> None:
        """Remove the file, link (not what it points at) or whole directory tree at ``path``."""
        self._check(instance_id, "remove", path)
        _refuse_root(path, "remove")
        with _activity.in_use(instance_id):
            await self._tree.remove(instance_id, path)

    async def rename(self, instance_id: str, source: str, target: str) -> None:
        """Move ``source`` to ``target`` (replacing a file or link there, never moving into a
        directory a link points at); both stay in the instance."""
        self._check(instance_id, "rename", source)
        requests.check_instance_path(target, "rename", "target")
        _refuse_root(source, "rename")
        with _activity.in_use(instance_id):
            await self._tree.rename(instance_id, source, target)

    async def mkdir(
        self, instance_id: str, path: str, *, parents: bool = True, exist_ok: bool = True
    ) -> None:
        """Make the directory ``path`` (and missing parents with ``parents``); an existing
        directory is fine with ``exist_ok``, anything else there is ``FileExistsError``."""
        self._check(instance_id, "mkdir", path)
        with _activity.in_use(instance_id):
            await self._tree.make_dir(instance_id, path, parents, exist_ok)

    def _check(self, instance_id: str, op: str, path: object) -> None:
        self._check_id(instance_id)
        requests.check_instance_path(path, op)


def _refuse_root(path: str, op: str) -> None:
    if posixpath.normpath(path or ".") in (".", "/"):
        raise ConfigError(f"{op} refuses the working dir or / itself; name a path inside it", op=op)


def _raise(result: Any, op: str, path: str) -> None:
    """The script's exit code as the error it stands for (nothing for 0)."""
    code = result.exit_code
    if code == 0 and not result.truncated:
        return
    if result.truncated:
        raise ConfigError(f"{op}: the listing of {path} is too large; ask for a smaller depth", op=op)
    if code == _MISSING:
        raise PathNotFoundError(f"no such file or directory in the instance: {path}", op=op)
    if code == _IS_DIR:
        raise IsADirectoryError(f"{path} is a directory")
    if code == _NOT_DIR:
        raise NotADirectoryError(f"{path} is not a directory (a link to one is not entered)")
    if code == _EXISTS:
        raise FileExistsError(f"{path} already exists and is not a directory")
    if code == _OUTSIDE:
        raise PathOutsideWorkspaceError(f"{op}: {path} is outside the instance workspace", op=op)
    if code == _IS_ROOT:
        raise ConfigError(
            f"{op} refuses the instance's working dir itself ({path}); name a path inside it", op=op
        )
    if code == _NO_FIND:
        raise ExecError(f"{op} needs GNU find (-printf) in the instance, which has none", op=op)
    said = (result.stderr or "").strip().splitlines()
    raise ExecError(
        f"{op} {path} failed in the instance: {said[-1][:200] if said else f'exit {code}'}", op=op
    )


def _entries(out: str, target: str, shown: str) -> list[FileEntry]:
    """The NUL-framed fields find printed, as entries named by the caller's path."""
    fields = out.split("\0")[:-1]
    if len(fields) % _FIELDS:
        raise ExecError("the instance's file listing was cut short", op="list")
    entries = []
    for at in range(0, len(fields), _FIELDS):
        kind, size, mode, mtime, link, found = fields[at : at + _FIELDS]
        below = found[len(target) :].lstrip("/") if found.startswith(target) else ""
        path = posixpath.join(shown, below) if below else shown
        entries.append(
            FileEntry(
                name=posixpath.basename(path) or path,
                path=path,
                type=_TYPES.get(kind, "other"),
                size=int(size),
                mode=int(mode, 8),
                mtime=float(mtime),
                symlink_target=link if kind == "l" else None,
            )
        )
    return entries
