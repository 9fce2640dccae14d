"""envd's ``filesystem.Filesystem`` Connect service (Stat, ListDir, MakeDir, Move, Remove).

Served by the e2b wheel's generated stub (``FilesystemWSGIApplication``), so the wire is the
vendor's. Each call runs one Python program INSIDE the sandbox's container (``docker exec``),
never on a host path of it, and does what envd's Go does (e2b-dev/infra,
``packages/envd/internal/services/filesystem/{stat,dir,move,remove,utils}.go``,
``packages/shared/pkg/filesystem/entry.go``, ``packages/envd/internal/permissions/path.go``):

- a relative path is joined to the user's home (``/home/user``) and cleaned, ``~`` expanded,
  ``~name`` refused (INVALID_ARGUMENT); an absolute path is used as given;
- an entry is ``os.Lstat``: a link is reported with the TYPE and permission bits of what it
  points at (UNSPECIFIED when dangling), ``symlink_target`` the fully resolved path (the link's
  own path when it cannot be resolved), ``size``/``modified_time`` the link's own; ``mode`` the
  permission bits only, ``permissions`` Go's ``FileMode.String()``; ``is_symlink`` is not set (this
  envd predates it); missing (ENOENT only) is NOT_FOUND, any other failure INTERNAL;
- ListDir follows links in the requested path (``EvalSymlinks``: NOT_FOUND, FAILED_PRECONDITION
  for a loop), refuses a non-directory (INVALID_ARGUMENT), then walks lexically without
  following links, ``depth`` levels (0 means 1), entries named under the requested path;
- MakeDir: ``os.Stat`` (links followed): a directory there is ALREADY_EXISTS, anything else
  INVALID_ARGUMENT; else every missing component is made (``EnsureDirs``: a component that
  exists and is not a directory, or a dangling link, is INTERNAL);
- Move: the destination's parents are made, then ``rename(2)`` (replaces a file or link there,
  never moves into a directory a link points at); a missing source is NOT_FOUND;
- Remove is ``os.RemoveAll``: a missing path is success, a link is removed, never followed.

Not modelled: users (everything runs as root, so nothing is chowned), xattr metadata.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from connectrpc.code import Code
from connectrpc.errors import ConnectError
from e2b.envd.filesystem import filesystem_pb as pb
from protobuf.wkt.google.protobuf.timestamp_pb import Timestamp

from fakes.e2b._sandboxes import container_exec

if TYPE_CHECKING:
    from fakes.e2b import E2BFake, FakeSandbox

HOME = "/home/user"

# Runs in the container: argv is (op, home, *paths/args); prints one JSON object, either
# {"error": [code, message]} or the op's result.
_PROGRAM = r"""
import json, os, posixpath, pwd, grp, shutil, stat, sys

class Fail(Exception):
    pass

def fail(code, message):
    raise Fail(code, message)

def resolve(path, home):
    if path.startswith("~"):
        if len(path) > 1 and path[1] != "/":
            fail("invalid_argument", "failed to expand path '%s': cannot expand user-specific home dir"
                 % path)
        path = home + path[1:]
    if path.startswith("/"):
        return path
    return posixpath.normpath(posixpath.join(home, path))

def gomode(m):
    out = ""
    for bit, c in ((stat.S_ISDIR(m), "d"), (stat.S_ISLNK(m), "L"),
                   (stat.S_ISBLK(m) or stat.S_ISCHR(m), "D"), (stat.S_ISFIFO(m), "p"),
                   (stat.S_ISSOCK(m), "S"), (m & stat.S_ISUID, "u"), (m & stat.S_ISGID, "g"),
                   (stat.S_ISCHR(m), "c"), (m & stat.S_ISVTX, "t")):
        out += c if bit else ""
    out = out or "-"
    return out + "".join(c if m & (1 << (8 - i)) else "-" for i, c in enumerate("rwxrwxrwx"))

def kind(m):
    return "file" if stat.S_ISREG(m) else "dir" if stat.S_ISDIR(m) else "symlink" if stat.S_ISLNK(m) else ""

def name_of(uid, table):
    try:
        return table(uid)[0]
    except KeyError:
        return str(uid)

def entry(path):
    try:
        info = os.lstat(path)
    except FileNotFoundError as exc:
        fail("not_found", "file not found: lstat %s: %s" % (path, exc.strerror.lower()))
    except OSError as exc:
        fail("internal", "error getting file info: lstat %s: %s" % (path, exc.strerror.lower()))
    found = {"name": posixpath.basename(path.rstrip("/")) or "/", "path": path, "size": info.st_size,
             "permissions": gomode(info.st_mode), "mtime_ns": info.st_mtime_ns,
             "owner": name_of(info.st_uid, pwd.getpwuid), "group": name_of(info.st_gid, grp.getgrgid)}
    if stat.S_ISLNK(info.st_mode):
        try:
            target = os.path.realpath(path, strict=True)
        except OSError:
            target = path
        found["symlink_target"] = target
        try:
            to = os.stat(target)
            found["type"], found["mode"] = kind(to.st_mode), stat.S_IMODE(to.st_mode) & 0o777
        except OSError:
            found["type"], found["mode"] = "", 0
    else:
        found["type"], found["mode"] = kind(info.st_mode), stat.S_IMODE(info.st_mode) & 0o777
    return found

def list_dir(path, depth):
    try:
        real = os.path.realpath(path, strict=True)
    except FileNotFoundError as exc:
        fail("not_found", "path not found: %s" % exc.strerror.lower())
    except OSError as exc:
        if exc.errno == 40:
            fail("failed_precondition", "cyclic symlink or chain >255 links at %r" % path)
        fail("internal", "error resolving symlink: %s" % exc.strerror.lower())
    try:
        if not stat.S_ISDIR(os.stat(real).st_mode):
            fail("invalid_argument", "path is not a directory: %s" % real)
    except FileNotFoundError:
        fail("not_found", "directory not found")
    found = []
    def walk(at, rel, level):
        try:
            names = sorted(os.listdir(at))
        except OSError as exc:
            fail("internal", "error reading directory %s: %s" % (real, exc.strerror.lower()))
        for name in names:
            try:
                one = entry(posixpath.join(at, name))
            except Fail as exc:
                if exc.args[0] == "not_found":
                    continue
                raise
            one["path"] = posixpath.join(path, rel, name) if rel else posixpath.join(path, name)
            found.append(one)
            full = posixpath.join(at, name)
            if level < depth and os.path.isdir(full) and not os.path.islink(full):
                walk(full, posixpath.join(rel, name) if rel else name, level + 1)
    walk(real, "", 1)
    return found

def ensure_dirs(path):
    parts, at = [], path
    while True:
        parts.append(at)
        at = posixpath.dirname(at)
        if at == "/":
            break
    for sub in reversed(parts):
        try:
            info = os.stat(sub)
        except FileNotFoundError:
            try:
                os.mkdir(sub, 0o755)
                os.chown(sub, 0, 0)
            except FileExistsError:
                try:
                    os.chown(sub, 0, 0)
                except OSError as exc:
                    fail("internal", "failed to chown directory: %s" % exc.strerror.lower())
            except OSError as exc:
                fail("internal", "failed to create directory: %s" % exc.strerror.lower())
            continue
        except OSError as exc:
            fail("internal", "failed to stat directory: %s" % exc.strerror.lower())
        if not stat.S_ISDIR(info.st_mode):
            fail("internal", "path is a file: %s" % sub)

def make_dir(path):
    try:
        info = os.stat(path)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        fail("internal", "error getting file info: stat %s: %s" % (path, exc.strerror.lower()))
    if info is not None:
        if stat.S_ISDIR(info.st_mode):
            fail("already_exists", "directory already exists: %s" % path)
        fail("invalid_argument", "path already exists but it is not a directory: %s" % path)
    ensure_dirs(path)
    return entry(path)

def move(source, target):
    ensure_dirs(posixpath.dirname(target))
    try:
        os.rename(source, target)
    except FileNotFoundError as exc:
        fail("not_found", "source file not found: rename %s %s: %s" % (source, target, exc.strerror.lower()))
    except OSError as exc:
        fail("internal", "error renaming: rename %s %s: %s" % (source, target, exc.strerror.lower()))
    return entry(target)

def remove(path):
    if posixpath.basename(path) in (".", ".."):  # Go's RemoveAll refuses a path ending in a dot
        fail("internal", "error removing file or directory: RemoveAll %s: invalid argument" % path)
    try:
        if stat.S_ISDIR(os.lstat(path).st_mode):
            shutil.rmtree(path)
        else:
            os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        fail("internal", "error removing file or directory: %s" % exc.strerror.lower())

def main(op, home, *args):
    paths = [resolve(a, home) for a in args[:2 if op == "move" else 1]]
    if op == "stat":
        return {"entry": entry(paths[0])}
    if op == "list":
        return {"entries": list_dir(paths[0], int(args[1]) or 1)}
    if op == "mkdir":
        return {"entry": make_dir(paths[0])}
    if op == "move":
        return {"entry": move(*paths)}
    remove(paths[0])
    return {}

try:
    print(json.dumps(main(*sys.argv[1:])))
except Fail as exc:
    print(json.dumps({"error": list(exc.args)}))
"""

_CODES = {
    "not_found": Code.NOT_FOUND,
    "already_exists": Code.ALREADY_EXISTS,
    "invalid_argument": Code.INVALID_ARGUMENT,
    "failed_precondition": Code.FAILED_PRECONDITION,
    "internal": Code.INTERNAL,
}
_TYPES = {"file": pb.FileType.FILE, "dir": pb.FileType.DIRECTORY, "symlink": pb.FileType.SYMLINK}


class FilesystemService:
    """``filesystem.Filesystem`` over the sandboxes of one :class:`E2BFake`."""

    def __init__(self, fake: E2BFake) -> None:
        self.fake = fake

    def _run(self, ctx: Any, op: str, *args: str) -> dict[str, Any]:
        sandbox: FakeSandbox | None = self.fake.running(ctx.request_headers.get("e2b-sandbox-id", ""))
        if sandbox is None:  # what the proxy answers for a dead sandbox: the SDK maps it
            raise ConnectError(Code.UNAVAILABLE, "The sandbox was not found")
        sandbox.touch()
        done = container_exec(sandbox.container, ["python3", "-c", _PROGRAM, op, HOME, *args])
        if done.returncode != 0:
            raise ConnectError(Code.INTERNAL, done.stderr.decode(errors="replace").strip()[-300:])
        result: dict[str, Any] = json.loads(done.stdout)
        if "error" in result:
            code, message = result["error"]
            raise ConnectError(_CODES[code], message)
        return result

    def stat(self, request: Any, ctx: Any) -> Any:
        return pb.StatResponse(entry=_entry(self._run(ctx, "stat", request.path)["entry"]))

    def list_dir(self, request: Any, ctx: Any) -> Any:
        found = self._run(ctx, "list", request.path, str(request.depth))["entries"]
        return pb.ListDirResponse(entries=[_entry(one) for one in found])

    def make_dir(self, request: Any, ctx: Any) -> Any:
        return pb.MakeDirResponse(entry=_entry(self._run(ctx, "mkdir", request.path)["entry"]))

    def move(self, request: Any, ctx: Any) -> Any:
        moved = self._run(ctx, "move", request.source, request.destination)["entry"]
        return pb.MoveResponse(entry=_entry(moved))

    def remove(self, request: Any, ctx: Any) -> Any:
        self._run(ctx, "remove", request.path)
        return pb.RemoveResponse()

    def __getattr__(self, name: str) -> Any:  # the watch calls: not modelled
        def refuse(request: Any, ctx: Any) -> Any:
            raise ConnectError(Code.UNIMPLEMENTED, f"the e2b fake has no filesystem {name}")

        return refuse


def _entry(found: dict[str, Any]) -> Any:
    seconds, nanos = divmod(found["mtime_ns"], 1_000_000_000)
    return pb.EntryInfo(
        name=found["name"],
        type=_TYPES.get(found["type"], pb.FileType.UNSPECIFIED),
        path=found["path"],
        size=found["size"],
        mode=found["mode"],
        permissions=found["permissions"],
        owner=found["owner"],
        group=found["group"],
        modified_time=Timestamp(seconds=seconds, nanos=nanos),
        symlink_target=found.get("symlink_target"),
    )
