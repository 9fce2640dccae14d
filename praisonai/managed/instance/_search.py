"""glob and grep inside an instance, without ever putting the model's text on a command line.

The commands below are constant text. What the model chose (the pattern, the path, the file
filter) reaches the instance's shell only as environment variables of the exec (``PRAISONAI_*``),
which the commands quote, so no pattern can run anything. Both commands end in the same ``awk``
cap: at most ``limit`` lines (each cut at :data:`MAX_LINE_CHARS`), then the count of all lines,
so the model is told how many were left out. POSIX sh, find, sort and awk (mawk, gawk, busybox
all do); grep needs ``-r``, ``-I``, ``--include`` and ``--exclude-dir`` (GNU, busybox, BSD).
"""

from __future__ import annotations

from dataclasses import dataclass

from praisonai.managed.instance._answers import BadArgument

#: Paths glob lists at most, and matching lines grep shows at most.
GLOB_LIMIT = 1000
GREP_LIMIT = 300
#: Characters of one line grep shows (a minified file's line can be megabytes).
MAX_LINE_CHARS = 500
#: Seconds a search may take.
SEARCH_TIMEOUT_S = 60
#: The exit status of the glob command when its path is not a directory.
NOT_A_DIRECTORY = 3


def _capped(limit: int) -> str:
    """awk printing the first ``limit`` lines it reads (long ones cut), then how many it read."""
    cut = f'(length($0) > {MAX_LINE_CHARS} ? substr($0, 1, {MAX_LINE_CHARS}) " [...]" : $0)'
    return f"awk '{{ if (NR <= {limit}) print {cut} }} END {{ print NR }}'"


#: Files under ``$PRAISONAI_PATH`` whose path below it matches ``$PRAISONAI_REGEX``, sorted.
GLOB_COMMAND = (
    f'[ -d "$PRAISONAI_PATH" ] && cd -- "$PRAISONAI_PATH" || exit {NOT_A_DIRECTORY}\n'
    "find . -name .git -prune -o ! -type d -print"
    " | awk 'substr($0, 3) ~ ENVIRON[\"PRAISONAI_REGEX\"]' | LC_ALL=C sort | " + _capped(GLOB_LIMIT)
)


def grep_command(*, ignore_case: bool, only: bool) -> str:
    """grep for ``$PRAISONAI_PATTERN`` (an extended regex) under ``$PRAISONAI_PATH``, in files
    named like ``$PRAISONAI_GLOB`` when ``only``; grep's exit status is the last line of stderr."""
    flags = "-rnHI -E --exclude-dir=.git" + (" -i" if ignore_case else "")
    include = ' --include="$PRAISONAI_GLOB"' if only else ""
    grep = f'grep {flags}{include} -e "$PRAISONAI_PATTERN" -- "$PRAISONAI_PATH"'
    return f'{{ {grep}; echo "$?" >&2; }} | ' + _capped(GREP_LIMIT)


@dataclass(frozen=True)
class Capped:
    """What a capped command printed: its first lines, and how many it printed in all."""

    lines: tuple[str, ...]
    total: int

    @classmethod
    def parse(cls, stdout: str) -> Capped:
        *lines, count = stdout.rstrip("\n").split("\n")
        return cls(tuple(lines), int(count)) if count.isdigit() else cls((), 0)

    @property
    def left_out(self) -> int:
        return max(0, self.total - len(self.lines))


def search_root(path: str, working_dir: str) -> str:
    """``path`` as the search commands get it, run in ``working_dir``: a path under the working
    dir becomes relative to it (local instances see the working dir only as their cwd)."""
    path = path.rstrip("/") or "/"
    base = working_dir.rstrip("/") or "/"
    if path == base:
        return "."
    if path.startswith(base + "/") and base != "/":
        return path[len(base) + 1 :]
    return path


def shown(given: str, searched: str, line: str) -> str:
    """``line`` as find or grep printed it under ``searched``, with its path as the model wrote
    it (``given``): ``src/a.py`` for ``.``, ``/workspace/src/a.py`` for ``/workspace``."""
    if not line.startswith(searched):
        return line
    rest = line[len(searched) :]
    if given in (".", "./") and rest.startswith("/"):
        return rest[1:]
    return given.rstrip("/") + rest if rest.startswith("/") else given + rest


def split_pattern(pattern: str, path: str) -> tuple[str, str]:
    """``(pattern, path)`` with an absolute pattern's leading components without wildcards moved
    into the path (``/workspace/src/**/*.py`` -> ``**/*.py`` under ``/workspace/src``), and a
    relative pattern's leading ``./`` dropped."""
    if not pattern.startswith("/"):
        while pattern.startswith("./"):
            pattern = pattern[2:]
        return pattern, path
    parts = pattern.split("/")
    fixed = 1
    while fixed < len(parts) - 1 and not any(c in parts[fixed] for c in "*?[{\\"):
        fixed += 1
    return "/".join(parts[fixed:]), "/".join(parts[:fixed]) or "/"


def glob_regex(pattern: str) -> str:
    """A POSIX extended regex matching what ``pattern`` matches of a path relative to the search
    root (the semantics are in ``glob``'s docstring)."""
    out: list[str] = []
    i, depth = 0, 0
    while i < len(pattern):
        c, step = pattern[i], 1
        if pattern.startswith("**/", i) and (i == 0 or pattern[i - 1] == "/"):
            out.append("([^/]*/)*")  # zero or more whole directories
            step = 3
        elif pattern.startswith("**", i):
            out.append(".*")
            step = 2
        elif c in "*?":
            out.append("[^/]*" if c == "*" else "[^/]")
        elif c == "[" and (end := _class_end(pattern, i)) > 0:
            out.append(_class(pattern[i + 1 : end]))
            step = end + 1 - i
        elif c == "\\" and i + 1 < len(pattern):
            out.append(_literal(pattern[i + 1]))
            step = 2
        elif c == "{" or (c in ",}" and depth):
            depth += {"{": 1, ",": 0, "}": -1}[c]
            out.append({"{": "(", ",": "|", "}": ")"}[c])
        else:
            out.append(_literal(c))
        i += step
    if depth:
        raise BadArgument("pattern has a { without its closing }")
    return "^" + "".join(out) + "$"


def _class_end(pattern: str, start: int) -> int:
    """Where the character class opened at ``start`` closes, or -1 (then ``[`` is literal)."""
    i = start + 1
    if i < len(pattern) and pattern[i] in "!^":
        i += 1
    if i < len(pattern) and pattern[i] == "]":  # a leading ] is a member
        i += 1
    end = pattern.find("]", i)
    return -1 if end < 0 or "/" in pattern[start:end] else end


def _class(body: str) -> str:
    negated = body[:1] in ("!", "^")
    members = body[1:] if negated else body
    # A backslash doubled means a backslash to POSIX brackets and to awk's alike.
    members = members.replace("\\", "\\\\")
    return f"[^{members}/]" if negated else f"[{members}]"  # a negated class never matches /


def _literal(c: str) -> str:
    return "\\" + c if c in ".[]()*+?{}|^$\\" else c
