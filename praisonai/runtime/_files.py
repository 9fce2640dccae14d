"""File requests' statuses: asked again when killed, and what a failure means to the caller."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from praisonai._errors import ConfigError, ExecError, PathNotFoundError

#: A file request whose tool a command killed is asked this often in all (``unkilled``).
KILLED_ATTEMPTS = 50

Request = Callable[..., Awaitable[tuple[str, bytes]]]


async def unkilled(
    request: Request, verb: str, *args: str, payload: bytes | None = None
) -> tuple[str, bytes]:
    """A file request asked again while a command killed its tool (which may run with the
    commands' uid): a killed read sent nothing whole, a killed write renamed all or nothing."""
    for _ in range(KILLED_ATTEMPTS - 1):
        status, body = await request(verb, *args, payload=payload)
        if status != "killed":
            return status, body
    return await request(verb, *args, payload=payload)


def file_error(status: str, path: str, op: str) -> Exception:
    """The error a file request's status word stands for (helper.sh's ``__p_why``, ``killed``...)."""
    if status == "isdir":
        return IsADirectoryError(f"{path} is a directory")
    if status == "notdir":
        return NotADirectoryError(f"a parent of {path} is not a directory")
    if status == "missing":
        return PathNotFoundError(f"no such file in the instance: {path}", op=op)
    if status == "denied":
        return PermissionError(f"permission denied: {path}")
    if status == "notfile":
        return ConfigError(
            f"{path} is not a regular file (a FIFO, device or socket); {op} handles regular files only",
            op=op,
        )
    if status == "killed":
        return ExecError(
            f"{op} of {path} failed: a process of the instance's commands killed it every time it was tried",
            op=op,
        )
    if status == "nospace":
        return ExecError(f"{op} of {path} failed: no space left on the instance's filesystem", op=op)
    return ExecError(f"{op} of {path} failed in the instance (status {status})", op=op)
