"""A stand-in for ``/__modal/.bin/modal-sandbox-fs-tools``, installed into every fake sandbox.

It answers the JSON commands the SDK builds (``modal/_utils/sandbox_fs_utils.py``): ReadFile streams
the file to stdout, WriteFile takes the bytes on stdin (parents created); errors go to stderr as the
``{"error_kind", "message"}`` payload the SDK parses, with exit code 1."""

FS_TOOLS_PATH = "/__modal/.bin/modal-sandbox-fs-tools"

FS_TOOLS = r"""#!/usr/bin/env python3
import errno, json, os, shutil, stat, sys
KINDS = {errno.ENOENT: "NotFound", errno.EISDIR: "IsDirectory", errno.ENOTDIR: "NotDirectory",
         errno.EACCES: "PermissionDenied", errno.EPERM: "PermissionDenied", errno.EEXIST: "AlreadyExists",
         errno.ENOTEMPTY: "DirectoryNotEmpty"}
def fail(kind, message):
    sys.stderr.write(json.dumps({"error_kind": kind, "message": message})); sys.exit(1)
cmd = json.loads(sys.argv[1]); (op, arg), = cmd.items(); path = arg.get("path")
try:
    if op == "ReadFile":
        if os.path.isdir(path): fail("IsDirectory", "Is a directory")
        with open(path, "rb") as f: shutil.copyfileobj(f, sys.stdout.buffer)
    elif op == "WriteFile":
        if os.path.isdir(path): fail("IsDirectory", "Is a directory")
        os.makedirs(os.path.dirname(path) or "/", exist_ok=True)
        with open(path, "wb") as f: shutil.copyfileobj(sys.stdin.buffer, f)
    elif op == "MakeDirectory":
        os.makedirs(path, exist_ok=True) if arg.get("create_parents", True) else os.mkdir(path)
    elif op == "Remove":
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path) if arg.get("recursive") else os.rmdir(path)
        else: os.remove(path)
    else:
        fail("Unsupported", "the fake's fs-tools does not model " + op)
except OSError as e:
    fail(KINDS.get(e.errno, "Other"), e.strerror or str(e))
"""
