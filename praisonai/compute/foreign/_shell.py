"""The command lines a provider written to PraisonAI's protocol is sent: it has ``execute`` alone,
so every exec option and every file operation becomes a shell line for its ``sh -c``.

Pure functions, so the exact shapes are testable without an instance. The file shapes are those
PraisonAI's own SharedCompute sends (``cat 'PATH'``; ``cat > 'PATH' <<'DELIM'`` + body), so
fakes written for PraisonAI parse them; unlike PraisonAI's, content round-trips byte for byte.
"""

from __future__ import annotations

import base64
import posixpath
import secrets
import string
from collections.abc import Mapping

from praisonai import _limits

#: A fresh delimiter is this many random uppercase letters. Upper case on purpose: PraisonAI's
#: security policy matches blocked words such as "dd" anywhere in the command line.
_DELIMITER_LETTERS = 16


def quoted(text: str) -> str:
    """``text`` in single quotes for ``sh`` (always quoted, so a path reads ``'PATH'``)."""
    return "'" + text.replace("'", "'\"'\"'") + "'"


def absolute(path: str, working_dir: str) -> str:
    """``path`` resolved against the instance's working dir, as every provider resolves it."""
    return path if path.startswith("/") else posixpath.join(working_dir, path)


def seconds(value: float) -> str:
    """A number of seconds as ``timeout(1)`` reads it (``30``, ``0.5``; never ``1e+06``)."""
    return f"{value:.3f}".rstrip("0").rstrip(".")


def exec_line(
    command: str,
    *,
    cwd: str | None,
    env: Mapping[str, str],
    timeout: float | None,
    stdin: bytes | None,
    missing_cwd_mark: str,
) -> str:
    """``command`` as one line for the provider's shell, with our exec options built in.

    ``cwd``: entered first; when it does not exist, ``missing_cwd_mark`` is printed on stderr and
    the line exits 1 (the caller turns that into ``PathNotFoundError``). ``env``: exported.
    ``timeout``: the command runs under ``timeout -k KILL_GRACE SECONDS`` where the instance has
    ``timeout(1)``, which kills its process group at the deadline (exit 124), so a timed-out
    command does not keep running after we gave up on it; without ``timeout(1)`` only the
    provider's own timeout applies. stdin is closed unless ``stdin`` gives its bytes (base64
    decoded inside the instance).
    """
    lines = []
    if cwd is not None:
        lines.append(f"cd -- {quoted(cwd)} 2>/dev/null || {{ echo {missing_cwd_mark} >&2; exit 1; }}")
    lines += [f"export {name}={quoted(value)}" for name, value in env.items()]
    lines.append(f"praisonai_command={quoted(command)}")
    feed = "" if stdin is None else f"printf '%s' {quoted(base64.b64encode(stdin).decode())} | base64 -d | "
    closed = " </dev/null" if stdin is None else ""
    run = f'sh -c -- "$praisonai_command"{closed}'  # "--": a command may start with "-"
    if timeout is None:
        lines.append(f"{feed}{run}")
    else:
        limit = f"timeout -k {seconds(_limits.KILL_GRACE_S)} {seconds(timeout)}"
        lines.append(f"if command -v timeout >/dev/null 2>&1; then {feed}{limit} {run}; else {feed}{run}; fi")
    return "\n".join(lines)


# ---- files: writes -------------------------------------------------------------------------------


def inline_text(data: bytes) -> str | None:
    """``data`` as text that can travel in a heredoc, or ``None``: it is not UTF-8, has a NUL
    byte (no command line can carry one), or is too large for one command line."""
    if len(data) > _limits.FOREIGN_INLINE_BYTES or b"\0" in data:
        return None
    try:
        return data.decode()
    except UnicodeDecodeError:
        return None


def new_delimiter(content: str) -> str:
    """A random uppercase heredoc delimiter that ``content`` does not contain (redrawn if it does)."""
    while True:
        delimiter = "PRAISONAI_EOF_" + "".join(
            secrets.choice(string.ascii_uppercase) for _ in range(_DELIMITER_LETTERS)
        )
        if delimiter not in content:
            return delimiter


def heredoc_write(path: str, content: str, delimiter: str) -> str:
    """Write ``content`` to ``path`` exactly, creating its directory: PraisonAI's shape,
    ``cat > 'PATH' <<'DELIM'`` + newline + body + newline + ``DELIM``.

    A heredoc always ends its body with a newline. Content that ends in one is sent without it;
    other content (an empty file too) is sent whole and cut back to its exact size by a later
    line, so nothing is added (PraisonAI's write added a newline to every file).
    """
    size = len(content.encode())
    body = content[:-1] if content.endswith("\n") else content
    target = quoted(path)
    lines = [
        "set -e",
        f'mkdir -p -- "$(dirname -- {target})"',
        f"cat > {target} <<'{delimiter}'\n{body}\n{delimiter}",
    ]
    if not content.endswith("\n"):
        lines.append(f"truncate -s {size} {target}")
    return "\n".join(lines)


def chunk_start(path: str, temp: str) -> str:
    """Create ``path``'s directory and an empty ``temp`` file to append chunks to."""
    return f'set -e\nmkdir -p -- "$(dirname -- {quoted(path)})"\n: > {quoted(temp)}'


def chunk_append(temp: str, chunk: bytes) -> str:
    """Append ``chunk`` (sent as base64) to ``temp``."""
    encoded = base64.b64encode(chunk).decode()
    return f"printf '%s' {quoted(encoded)} | base64 -d >> {quoted(temp)}"


def chunk_finish(temp: str, path: str) -> str:
    """Put the whole ``temp`` file in place of ``path`` at once."""
    return f"mv -f -- {quoted(temp)} {quoted(path)}"


def remove(path: str) -> str:
    return f"rm -f -- {quoted(path)}"


# ---- files: reads --------------------------------------------------------------------------------


def cat(path: str) -> str:
    """Read a text file: exactly ``cat 'PATH'``, the one read shape PraisonAI's fakes answer."""
    return f"cat {quoted(path)}"


def probe(path: str) -> str:
    """What ``path`` is: prints ``dir``, ``missing``, or ``file`` and its size in bytes."""
    target = quoted(path)
    return (
        f"if [ -d {target} ]; then echo dir; elif [ -e {target} ]; "
        f"then printf 'file '; wc -c < {target}; else echo missing; fi"
    )


def read_chunk(path: str, offset: int, size: int) -> str:
    """``size`` bytes of ``path`` from byte ``offset``, as base64."""
    return f"tail -c +{offset + 1} {quoted(path)} | head -c {size} | base64"
