"""What a tool run on an instance answers the model (the shared instance's tools and a managed
session's instance tools alike), and how it checks the model's arguments first.

Tools never raise and never return an empty string (``(no output)``): failures, including
arguments of the wrong type or value, come back as ``Error (exit N): …`` or ``Error: …`` text the
model can act on, before anything runs. They write files byte-exact through the provider's file
API (never through a command line), hand the model at most :func:`read_window` bytes of a
file (its head and tail, with a note how to page through the rest), and record every command and
write in the audit log.
"""

from __future__ import annotations

import math
import os
import shlex
from collections.abc import Mapping
from typing import Any

from praisonai import _limits
from praisonai._errors import ConfigError, PraisonAIError
from praisonai._types import ExecResult, SessionResult

#: Seconds a command may run unless the model asks for another limit.
DEFAULT_TOOL_TIMEOUT_S = 120
#: Bytes of a file ``read_file`` hands the model at once, like exec's cap on a command's output.
MAX_TOOL_OUTPUT_BYTES = _limits.DEFAULT_MAX_OUTPUT_BYTES
NO_OUTPUT = "(no output)"


class BadArgument(Exception):
    """An argument the model passed is unusable; the message says why in one sentence."""


#: What a tool answers as ``Error: …`` instead of raising: a bad argument or a failed operation.
TOOL_FAILURES = (BadArgument, PraisonAIError, OSError, ValueError)


def command_answer(result: ExecResult | SessionResult | Mapping[str, Any], timeout: object = None) -> str:
    """What the model is told of a command: its output (stdout, then stderr), or the same under
    ``Error (exit N):`` / ``Error (timed out after Ns):``; never empty. ``result`` may also be the
    dict a PraisonAI provider returns (``stdout``, ``stderr``, ``exit_code``)."""
    if not isinstance(result, ExecResult | SessionResult):
        result = ExecResult(
            str(result.get("stdout") or ""),
            str(result.get("stderr") or ""),
            int(result.get("exit_code") or 0),
        )
    output = _joined(result.stdout, result.stderr) or NO_OUTPUT
    if result.timed_out:
        after = "" if timeout is None else f" after {timeout}s"
        return f"Error (timed out{after}): {output}"
    if result.exit_code != 0:
        return f"Error (exit {result.exit_code}): {output}"
    return output


def for_model(text: str) -> str:
    """``text`` as a model receives it: whole up to the tool-result limit
    (``PRAISONAI_TOOL_RESULT_CHARS``, else ``_limits.TOOL_RESULT_MAX_CHARS``); longer, its head and
    tail with a note in between saying how many characters were cut and how to see them."""
    limit = tool_result_limit()
    if len(text) <= limit:
        return text
    half = limit // 2
    cut = len(text) - 2 * half
    note = (
        f"\n[... {cut} of {len(text)} characters cut from the middle of this result (the limit is"
        f" {limit}); read a file in parts with read_file's offset and limit, or narrow the command"
        " (e.g. | head, | tail, grep) ...]\n"
    )
    return text[:half] + note + text[len(text) - half :]


def read_window() -> int:
    """Bytes of a file one ``read_file`` hands the model: the tool-result limit less room for its
    paging note (a byte is at most a character), so the answer is never cut again."""
    return tool_result_limit() - _NOTE_ROOM


#: Characters kept for ``read_file``'s note on what it left out and how to read it.
_NOTE_ROOM = 500


def tool_result_limit() -> int:
    """The tool-result limit in characters; a ``PRAISONAI_TOOL_RESULT_CHARS`` that is no whole
    number of at least 1000 is refused in one sentence."""
    raw = os.environ.get("PRAISONAI_TOOL_RESULT_CHARS")
    if raw is None:
        return _limits.TOOL_RESULT_MAX_CHARS
    if not raw.strip().isdigit() or int(raw) < 1000:
        raise ConfigError(
            f"PRAISONAI_TOOL_RESULT_CHARS={raw!r:.40} is not a whole number of at least 1000; "
            "set a character count or unset it (default 30000)",
            op="tools",
        )
    return int(raw)


def read_arguments(path: object, offset: object, limit: object) -> tuple[str, int, int | None]:
    """``read_file``'s arguments checked: the path, the first byte, how many bytes (``None``: the
    rest, within the cap). ``BadArgument`` names the one that is wrong."""
    checked, start = path_argument(path), _count("offset", offset, 0, None)
    return checked, start, None if limit is None else _count("limit", limit, 1, read_window())


def file_answer(path: str, data: bytes, start: int, size: int | None) -> str:
    """What the model is told of a file read from byte ``start``; ``BadArgument`` when ``start``
    is at or past its end."""
    if not data:
        return "(empty file)"
    if _binary(data):
        return (
            f"{path} is a binary file ({len(data)} bytes), not text; inspect it with execute_command,"
            f" e.g. `file {shlex.quote(path)}` or `od -c {shlex.quote(path)} | head`"
        )
    if start >= len(data):
        raise BadArgument(f"offset {start} is at or past the end of {path} ({len(data)} bytes)")
    return _window(path, data, start, size)


def listing_answer(result: ExecResult) -> str:
    """What the model is told of a ``list_command`` run."""
    if result.exit_code != 0:
        return f"Error (exit {result.exit_code}): {_joined(result.stdout, result.stderr) or NO_OUTPUT}"
    return result.stdout.strip() or "(empty directory)"


def list_command(path: str) -> str:
    """One entry a line, directories marked with a trailing slash, hidden files included. A name
    holding a newline or another control character is one C-quoted line (``"a\\nb"``, GNU ls's
    ``c-maybe``; ``?`` for each where ls is not GNU's): the file's own name can never add a row."""
    quoted = shlex.quote(path)
    return (
        "if ls --quoting-style=c-maybe -d / >/dev/null 2>&1; "
        f"then ls -1Ap --quoting-style=c-maybe -- {quoted}; else ls -1Apq -- {quoted}; fi"
    )


def text_argument(name: str, value: object) -> str:
    """``value`` if it is text that can travel as UTF-8."""
    if not isinstance(value, str):
        raise BadArgument(f"{name} must be a string, not {type(value).__name__}")
    try:
        value.encode()
    except UnicodeEncodeError as exc:
        raise BadArgument(f"{name} is not valid text ({exc.reason} at character {exc.start})") from None
    return value


def path_argument(value: object) -> str:
    path = text_argument("path", value)
    if not path or "\0" in path:
        raise BadArgument("path must be a non-empty file path without NUL characters")
    return path


def seconds_argument(value: object) -> float:
    """The tool's timeout as seconds: a positive, finite number (not a string, not a boolean)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadArgument(f"timeout must be a number of seconds, not {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise BadArgument(f"timeout must be a positive number of seconds, not {value!r}")
    return float(value)


def _count(name: str, value: object, least: int, most: int | None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least or (most and value > most):
        bound = f"from {least} to {most}" if most else f"{least} or more"
        raise BadArgument(f"{name} must be a whole number {bound}, not {value!r}")
    return value


def _window(path: str, data: bytes, start: int, limit: int | None) -> str:
    """The file from byte ``start``: ``limit`` bytes of it, or all of it within the cap (else its
    head and tail), with a note on what was left out and how to read it."""
    window = read_window()
    if limit is None and len(data) - start > window:
        head_end = _char_start(data, start + window // 2)
        tail_start = _char_start(data, len(data) - window // 2)
        left_out, page = tail_start - head_end, min(tail_start - head_end, window)
        note = (
            f"\n[... {left_out} bytes left out (bytes {head_end} to {tail_start} of {len(data)}); read them"
            f" with read_file({path!r}, offset={head_end}, limit={page}) ...]\n"
        )
        return _decoded(data[start:head_end]) + note + _decoded(data[tail_start:])
    end = min(len(data), start + (limit or window))
    end = _char_start(data, end) if _char_start(data, end) > start else end  # no cut character
    more = len(data) - end
    note = f"\n[{more} more bytes of {len(data)}: read_file({path!r}, offset={end})]" if more > 0 else ""
    return _decoded(data[start:end]) + note


def _binary(data: bytes) -> bool:
    """Whether the file's first 8000 bytes are not UTF-8 text (a character cut at the end of them
    aside): an executable, an image, an archive. Text with a NUL in it is still text."""
    head = data[: _char_start(data, 8000)] if len(data) > 8000 else data
    try:
        head.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def _char_start(data: bytes, at: int) -> int:
    """``at`` moved back to the start of the UTF-8 character it falls in (3 bytes at most)."""
    for _ in range(3):
        if not 0 < at < len(data) or data[at] & 0xC0 != 0x80:
            break
        at -= 1
    return at


def _decoded(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _joined(stdout: str, stderr: str) -> str:
    parts = [s.rstrip("\n") for s in (stdout, stderr) if s.strip()]
    return "\n".join(parts)
