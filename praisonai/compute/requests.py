"""What the contract's edge accepts: instance ids and exec requests, checked before anything runs.

``execute`` is called from untyped code (agents' tools, PraisonAI's SDK), and providers turn ids
into host paths and container names: both are refused here, with one sentence, before any file,
container or process is touched.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shlex
import tarfile
from collections.abc import AsyncIterable, Iterator, Mapping, Sequence
from pathlib import Path

from praisonai import _limits
from praisonai._errors import (
    ConfigError,
    InvalidInstanceIdError,
    PathNotFoundError,
    PathOutsideWorkspaceError,
)
from praisonai._limits import check_timeout
from praisonai._types import UNSET, ExecRequest, OutputSink, Stdin, Unset
from praisonai.compute.config import ComputeConfig


def exec_request(
    command: str | Sequence[str],
    timeout: float | Unset | None = UNSET,
    *,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    max_output: int | None = None,
    on_output: OutputSink | None = None,
    stdin: bytes | str | AsyncIterable[bytes] | None = None,
) -> ExecRequest:
    """``execute``'s arguments as one request, every default resolved (``timeout`` omitted: the
    default; ``None``: no limit), or ConfigError naming what is wrong."""
    _check_exec_args(command, cwd, env, max_output, stdin)
    request = ExecRequest(
        command=command if isinstance(command, str) else shlex.join(command),
        cwd=cwd,
        env=checked_env(env or {}),
        timeout=_resolve_timeout(timeout),
        max_output=max_output or _limits.DEFAULT_MAX_OUTPUT_BYTES,
        on_output=on_output,
        stdin=_stdin(stdin),
    )
    if not request.command.strip():
        raise ConfigError("the command is empty", op="exec")
    return request


#: An instance id as ``provision`` makes it: the provider's name, ``_``, 12 lowercase hex digits.
#: Never a path: no ``/``, and it starts with a letter.
INSTANCE_ID = re.compile(r"(?P<provider>[A-Za-z][A-Za-z0-9_.-]*)_[0-9a-f]{12}")


def is_instance_id(text: object, provider: str | None = None) -> bool:
    """Whether ``text`` is an instance id (of ``provider``, when given)."""
    match = INSTANCE_ID.fullmatch(text) if isinstance(text, str) else None
    return match is not None and provider in (None, match["provider"])


def check_instance_id(instance_id: object, provider: str | None = None) -> None:
    """Refuse what is not an instance id (of ``provider``, when given).

    Raises:
        InvalidInstanceIdError (ValueError): it is not one; the message shows the expected form.
    """
    if not is_instance_id(instance_id, provider):
        form = f"{provider or '<provider>'}_<12 hex digits>"
        raise InvalidInstanceIdError(
            f"{instance_id!r} is not an instance id{f' of the {provider} provider' if provider else ''}: "
            f"ids look like {form}, e.g. {provider or 'docker'}_3f9a1c2b7d4e",
            op="lookup",
        )


def _resolve_timeout(timeout: object) -> float | None:
    if timeout is UNSET:
        return _limits.DEFAULT_EXEC_TIMEOUT_S
    return check_timeout(timeout, allow_zero=False)


def _check_exec_args(command: object, cwd: object, env: object, max_output: object, stdin: object) -> None:
    """Refuse, with one sentence, what the type hints of ``execute`` already exclude: it is
    called from untyped code (agents' tools, PraisonAI's SDK) and must not fail deep inside."""
    if isinstance(command, str):
        parts = [command]
    elif isinstance(command, Sequence) and command and all(isinstance(p, str) for p in command):
        parts = list(command)
    else:
        raise ConfigError(
            f"the command must be a string or a non-empty list of strings, not {command!r:.80}", op="exec"
        )
    if any("\0" in p for p in parts):
        raise ConfigError("the command contains a NUL byte, which no shell can run", op="exec")
    check_command_text(parts)
    if cwd is not None and (not isinstance(cwd, str) or "\0" in cwd or not cwd):
        raise ConfigError(f"cwd must be a non-empty path without NUL bytes, not {cwd!r:.80}", op="exec")
    if cwd is not None:
        check_instance_path(cwd, "exec", "cwd")
    if env is not None and not isinstance(env, Mapping):
        raise ConfigError(f"env must be a mapping of names to strings, not {type(env).__name__}", op="exec")
    if max_output is not None and (
        isinstance(max_output, bool) or not isinstance(max_output, int) or max_output <= 0
    ):
        raise ConfigError(f"max_output must be a positive number of bytes, not {max_output!r}", op="exec")
    if stdin is not None and not isinstance(stdin, bytes | bytearray | memoryview | str | AsyncIterable):
        wanted = "bytes, text, an async iterable of bytes or None"
        raise ConfigError(f"stdin must be {wanted}, not {type(stdin).__name__}", op="exec")


def _stdin(stdin: bytes | bytearray | memoryview | str | AsyncIterable[bytes] | None) -> Stdin | None:
    if stdin is None or isinstance(stdin, AsyncIterable):
        return stdin
    return stdin.encode() if isinstance(stdin, str) else bytes(stdin)


def check_command_text(parts: Sequence[str]) -> None:
    """Refuse a command that is not UTF-8 text. Arguments made of bytes that are not UTF-8 reach
    Python as lone surrogates (``\\udcff`` for the byte 0xff); every provider's wire carries text,
    so they are refused here, at once, rather than fail differently in each.

    Raises:
        ConfigError: one sentence naming the argument, the byte and what to do instead.
    """
    for position, part in enumerate(parts, 1):
        try:
            part.encode()
        except UnicodeEncodeError as exc:
            char = ord(part[exc.start])
            byte = f"the byte 0x{char - 0xDC00:02x}" if 0xDC80 <= char <= 0xDCFF else f"U+{char:04X}"
            where = f"argument {position} of the command" if len(parts) > 1 else "the command"
            raise ConfigError(
                f"{where} is not UTF-8 text (it holds {byte}); commands must be UTF-8: write other "
                f"bytes from inside the command, e.g. printf '\\{char - 0xDC00:03o}'",
                op="exec",
            ) from None


def checked_env(env: Mapping[str, str]) -> Mapping[str, str]:
    """``env`` validated as a config's env is (names; values without NUL bytes, UTF-8, within
    Linux's sizes), or ConfigError."""
    try:
        return ComputeConfig.coerce({"env": dict(env)}).env
    except ConfigError as exc:  # the rule is the config's; the words are this call's
        raise ConfigError(str(exc).removeprefix("invalid compute config: "), op="exec") from None


def check_instance_path(path: object, op: str, what: str = "path") -> None:
    """Refuse a path in an instance that no file system there could hold: not a string, a NUL
    byte, text that is not UTF-8, longer than Linux's PATH_MAX or with a name
    longer than NAME_MAX (ENAMETOOLONG, said before any provider is asked).

    Raises:
        ConfigError: one sentence naming the path (cut short) and the limit.
    """
    if not isinstance(path, str) or "\0" in path:  # "" is the working dir, as each provider reads it
        raise ConfigError(f"a {what} must be a string without NUL bytes, not {path!r:.80}", op=op)
    try:
        encoded = path.encode()
    except UnicodeEncodeError:
        raise ConfigError(f"the {what} {path!r:.80} is not UTF-8 text; name files in UTF-8", op=op) from None
    _check_length(encoded, what, op)


def checked_host_path(path: object, op: str, *, must_exist: bool = False) -> Path:
    """``path`` on this machine (an upload's source, a download's target) as a ``Path``, refused
    in one sentence when no file system could hold it (see :func:`check_instance_path`); with
    ``must_exist``, a missing path (or a link to nowhere) is ``PathNotFoundError``."""
    if not isinstance(path, str | os.PathLike) or not os.fspath(path) or "\0" in os.fspath(path):
        raise ConfigError(f"a local path must be a non-empty path without NUL bytes, not {path!r:.80}", op=op)
    local = Path(path)
    _check_length(os.fsencode(local), "local path", op)
    if must_exist:
        try:
            with host_path_errors(op, local):
                local.stat()  # not exists(): it answers False for a loop of links too
        except FileNotFoundError:
            raise PathNotFoundError(f"no local file or directory {local}", op=op) from None
    return local


@contextlib.contextmanager
def host_path_errors(op: str, local: Path) -> Iterator[None]:
    """A loop of symlinks or a name too long on this machine's side of a transfer, or an archive
    entry the safety filter refused (an absolute link, a path out of the target), said as what it
    is: the OS's and tarfile's own words name neither the operation nor what to do."""
    try:
        yield
    except tarfile.FilterError as exc:  # the instance sent an entry that would land outside the target
        raise PathOutsideWorkspaceError(
            f"{op}: refused {exc.tarinfo.name!r} from the instance, which would land outside {local} "
            f"({type(exc).__name__}); entries before it may have been written there",
            op=op,
        ) from exc
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ConfigError(
                f"{op}: the local path {str(local)[:200]} goes through a loop of symbolic links; "
                f"point it at a real file or directory",
                op=op,
            ) from None
        if exc.errno == errno.ENAMETOOLONG:
            raise ConfigError(
                f"{op}: a local path under {str(local)[:200]} is too long for this system", op=op
            ) from None
        raise


def _check_length(encoded: bytes, what: str, op: str) -> None:
    longest = max((len(name) for name in encoded.split(b"/")), default=0)
    if len(encoded) > _limits.MAX_PATH_BYTES or longest > _limits.MAX_NAME_BYTES:
        raise ConfigError(
            f"the {what} {encoded[:60].decode(errors='replace')!r}... is too long ({len(encoded)} bytes, "
            f"a name of {longest}): paths hold at most {_limits.MAX_PATH_BYTES} bytes, "
            f"names {_limits.MAX_NAME_BYTES}",
            op=op,
        )
