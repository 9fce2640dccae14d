"""File requests' statuses (asked again when killed, and what a failure means to the caller),
and the reading of a spooled stream."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from praisonai._errors import ConfigError, ExecError, PathNotFoundError
from praisonai._output import OutputBuffer

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
    if status == "short":  # the helper's input ended inside the payload (seldom answered: we are gone)
        return ExecError(
            f"{op} of {path} was cut off before all its bytes came; the file is as it was", op=op
        )
    if status == "nospace":
        return ExecError(f"{op} of {path} failed: no space left on the instance's filesystem", op=op)
    return ExecError(f"{op} of {path} failed in the instance (status {status})", op=op)


async def fetch_spooled(request: Request, path: str, buffer: OutputBuffer) -> None:
    """Copy a spooled stream into ``buffer``, moving only its head and tail when it is long."""
    cap = buffer.head_size + buffer.tail_size
    head = await _spooled(request, "__p_read", path, "0", str(cap + 1))
    if len(head) <= cap:
        buffer.write(head)
        return
    size = await _spooled(request, "__p_size", path)
    tail = await _spooled(request, "__p_tail", path, str(buffer.tail_size))
    buffer.write(head[: buffer.head_size])
    buffer.skip(int(size.strip() or 0) - buffer.head_size - len(tail))
    buffer.write(tail)


async def _spooled(request: Request, function: str, path: str, *args: str) -> bytes:
    """A read of a spooled stream; the instance still at its process limit after the retries
    is an error, not output silently lost."""
    status, body = await request(function, path, *args)
    if status == "nofork":
        raise ExecError(
            f"the instance stayed at its process limit (a command forks without end?): the output "
            f"in {path} could not be read; end what runs there, e.g. kill a background process",
            op="exec",
        )
    return body
