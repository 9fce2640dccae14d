"""The managed loop's tools on one instance: run a command, read, write and edit files, list a
directory, find files by glob, search file contents — async, through an :class:`AsyncSandbox`.

The model's arguments are checked before anything runs; a bad one, an unknown tool or a failed
operation comes back as a :class:`ToolOutcome` with ``is_error=True`` and one sentence the model
can act on (never an exception, except the caller's cancellation). File content never travels on
a command line: reads, writes and edits go through the sandbox's file API, byte-exact; glob and
grep get the model's pattern and path as environment variables of a constant command (see
:mod:`praisonai.managed.instance._search`). Cancelling :meth:`InstanceTools.call` (an anyio
cancel scope around it) cancels the exec, which kills the command's process tree in the instance.
The text conventions, argument checks and read windowing are those of SharedCompute's tools
(:mod:`praisonai.managed.instance._answers`).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import posixpath
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from praisonai._errors import ConfigError
from praisonai._types import ExecResult
from praisonai.llm.tools import ToolSpec, tool_spec
from praisonai.managed.config._tools import INSTANCE_TOOL_NAMES
from praisonai.managed.instance import _search as search
from praisonai.managed.instance._answers import (
    DEFAULT_TOOL_TIMEOUT_S,
    MAX_TOOL_OUTPUT_BYTES,
    NO_OUTPUT,
    TOOL_FAILURES,
    BadArgument,
    command_answer,
    file_answer,
    for_model,
    list_command,
    listing_answer,
    path_argument,
    read_arguments,
    seconds_argument,
    text_argument,
    tool_result_limit,
)
from praisonai.sandbox import AsyncSandbox

#: Seconds ``list_files`` may take.
LIST_TIMEOUT_S = 60


@dataclass(frozen=True)
class ToolOutcome:
    """A tool's answer for the model: ``content`` (never empty), whether it is an error, and the
    command's exit code (``execute_command`` only; 124 when it timed out)."""

    content: str
    is_error: bool
    exit_code: int | None = None


def _ok(content: str, exit_code: int | None = None) -> ToolOutcome:
    return ToolOutcome(content or NO_OUTPUT, False, exit_code)


def _error(message: str, exit_code: int | None = None) -> ToolOutcome:
    return ToolOutcome(message if message.startswith("Error") else f"Error: {message}", True, exit_code)


class InstanceTools:
    """The tools of :data:`INSTANCE_TOOL_NAMES` on ``sandbox``; relative paths (and commands)
    start at ``working_dir``. The sandbox is borrowed: closing it is the caller's business."""

    def __init__(self, sandbox: AsyncSandbox, working_dir: str = "/workspace") -> None:
        if not isinstance(working_dir, str) or not working_dir.startswith("/") or "\0" in working_dir:
            raise ConfigError(f"working_dir must be an absolute path, not {working_dir!r:.80}", op="tools")
        tool_result_limit()  # a bad PRAISONAI_TOOL_RESULT_CHARS is said before any model request
        self.sandbox = sandbox
        self.working_dir = working_dir
        self._box = _Toolbox(sandbox, working_dir)

    def specs(self, names: Iterable[str]) -> list[ToolSpec]:
        """:func:`instance_specs` for this instance's working dir."""
        return instance_specs(names, self.working_dir)

    async def call(self, name: str, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Run tool ``name`` with the model's ``arguments``. Never raises, except the caller's
        cancellation (which kills a running command's process tree in the instance)."""
        if name not in INSTANCE_TOOL_NAMES:
            return _error(f"no tool named {name!r}; the tools are {_listed()}")
        if not isinstance(arguments, Mapping):
            return _error(f"the arguments of {name} must be a JSON object, not {type(arguments).__name__}")
        tool: Callable[..., Awaitable[ToolOutcome]] = getattr(self._box, name)
        try:
            tool_signature(name).bind(**arguments)
        except TypeError as exc:  # a missing, unknown or non-string argument name
            return _error(f"{name} takes ({', '.join(tool_signature(name).parameters)}): {exc}")
        try:
            outcome = await tool(**arguments)
        except TOOL_FAILURES as exc:
            outcome = _error(str(exc) or type(exc).__name__)
        except Exception as exc:  # a defect below us must not end the model's turn
            outcome = _error(f"{type(exc).__name__}: {exc}")
        return dataclasses.replace(outcome, content=for_model(outcome.content))


def _listed() -> str:
    return ", ".join(INSTANCE_TOOL_NAMES)


@functools.cache
def tool_signature(name: str) -> inspect.Signature:
    """The tool's parameters as the model passes them (without ``self``)."""
    signature = inspect.signature(getattr(_Toolbox, name))
    return signature.replace(parameters=list(signature.parameters.values())[1:])


def tool_text(name: str, working_dir: str) -> str:
    """The tool's whole docstring, ``Args:`` included, with the working dir filled in."""
    return (inspect.getdoc(getattr(_Toolbox, name)) or "").replace("{working_dir}", working_dir)


def instance_specs(names: Iterable[str], working_dir: str = "/workspace") -> list[ToolSpec]:
    """What the model is told about the tools ``names`` (in that order, each once); no instance
    is needed for it.

    Raises:
        ConfigError: a name is not one of :data:`INSTANCE_TOOL_NAMES`.
    """
    chosen = list(dict.fromkeys(names))
    unknown = [n for n in chosen if n not in INSTANCE_TOOL_NAMES]
    if unknown:
        raise ConfigError(f"no instance tool named {unknown[0]!r}; the tools are {_listed()}", op="tools")
    return [_spec(name, working_dir) for name in chosen]


@functools.cache
def _spec(name: str, working_dir: str) -> ToolSpec:
    """The tool's schema from its signature; its description is the whole docstring before
    ``Args:`` (tool_spec keeps the first paragraph only), with the working dir filled in."""
    tool = getattr(_Toolbox, name)  # the unbound method: tool_spec leaves its ``self`` out
    text = (inspect.getdoc(tool) or "").split("\nArgs:", 1)[0]
    paragraphs = (" ".join(p.split()) for p in text.split("\n\n"))
    description = "\n\n".join(p for p in paragraphs if p).replace("{working_dir}", working_dir)
    return dataclasses.replace(tool_spec(tool), description=description)


class _Toolbox:
    """The tools themselves. Each method's name, signature and docstring are what the model is
    told (``{working_dir}`` is filled in); each checks its arguments before anything runs and
    raises one of ``TOOL_FAILURES`` for the model to read."""

    def __init__(self, sandbox: AsyncSandbox, working_dir: str) -> None:
        self._sandbox = sandbox
        self._wd = working_dir

    async def execute_command(self, command: str, timeout: int = DEFAULT_TOOL_TIMEOUT_S) -> ToolOutcome:
        """Run a shell command (sh -c) on the Linux instance and return its output and exit code.

        Each call is a new shell that starts in {working_dir}: cd and variables do not carry over
        to the next call (chain commands with &&). Output over the tool-result limit keeps its head
        and tail.

        Args:
            command: The shell command line to run.
            timeout: Seconds before the command and everything it started are killed.
        """
        command, seconds = text_argument("command", command), seconds_argument(timeout)
        if not command.strip():
            raise BadArgument("command must not be empty")
        result = await self._sandbox.exec(command, cwd=self._wd, timeout=seconds)
        failed = result.timed_out or result.exit_code != 0
        return ToolOutcome(command_answer(result, timeout), failed, result.exit_code)

    async def read_file(self, path: str, offset: int = 0, limit: int | None = None) -> ToolOutcome:
        """Read a text file on the instance (relative paths start at {working_dir}).

        A file longer than the tool-result limit (30 000 characters unless set otherwise) comes
        back as its head and tail with a note on the bytes left out; read those with offset and
        limit.

        Args:
            path: The file to read.
            offset: The byte to start at (0: the beginning).
            limit: How many bytes to read, at most the limit (default: the rest of the file).
        """
        path, start, size = read_arguments(path, offset, limit)
        return _ok(file_answer(path, await self._sandbox.read_file(self._at(path)), start, size))

    async def write_file(self, path: str, content: str) -> ToolOutcome:
        """Write a file on the instance exactly as given (no newline is added), replacing it if it
        exists; parent directories are created. Relative paths start at {working_dir}.

        Args:
            path: The file to write.
            content: The whole content of the file.
        """
        path, data = path_argument(path), text_argument("content", content).encode()
        await self._sandbox.write_file(self._at(path), data)
        return _ok(f"Wrote {len(data)} bytes to {path}")

    async def edit_file(
        self, path: str, old_string: str, new_string: str, replace_all: bool = False
    ) -> ToolOutcome:
        """Replace exact text in a file on the instance (relative paths start at {working_dir}).

        old_string must occur exactly once in the file, whitespace and indentation included,
        unless replace_all is true; the rest of the file is left byte for byte as it was.

        Args:
            path: The file to edit.
            old_string: The exact text to replace; include enough surrounding lines to make it unique.
            new_string: The text to put in its place (may be empty, to delete old_string).
            replace_all: Replace every occurrence instead of exactly one.
        """
        path = path_argument(path)
        old, new = (
            text_argument("old_string", old_string).encode(),
            text_argument("new_string", new_string).encode(),
        )
        if not isinstance(replace_all, bool):
            raise BadArgument(f"replace_all must be true or false, not {replace_all!r}")
        if not old:
            raise BadArgument("old_string must not be empty; to create or overwrite a file use write_file")
        if old == new:
            raise BadArgument("old_string and new_string are the same; there is nothing to change")
        target = self._at(path)
        data = await self._sandbox.read_file(target)
        found = data.count(old)
        if found == 0:
            raise BadArgument(
                f"old_string was not found in {path}; read the file and copy the text exactly, "
                "whitespace included"
            )
        if found > 1 and not replace_all:
            raise BadArgument(
                f"old_string occurs {found} times in {path}; include more surrounding text to make it "
                "unique, or set replace_all to true to replace every occurrence"
            )
        await self._sandbox.write_file(target, data.replace(old, new))
        return _ok(f"Replaced {found} occurrence{'s' if found > 1 else ''} in {path}")

    async def list_files(self, path: str = ".") -> ToolOutcome:
        """List a directory on the instance, one entry a line, directories ending in /, hidden
        entries included (relative paths start at {working_dir}).

        Args:
            path: The directory to list.
        """
        path = path_argument(path)
        result = await self._sandbox.exec(
            list_command(search.search_root(path, self._wd)), cwd=self._wd, timeout=LIST_TIMEOUT_S
        )
        return ToolOutcome(listing_answer(result), result.exit_code != 0)

    async def glob(self, pattern: str, path: str = ".") -> ToolOutcome:
        """Find files (not directories) whose path below `path` matches a glob pattern; sorted,
        at most 1000. Relative paths start at {working_dir}; .git directories are skipped.

        `*` matches within one path component and `?` one character of it, `[abc]`/`[!abc]` one
        character of a set, `{a,b}` either alternative, `**/` zero or more directories and `**`
        elsewhere anything. The pattern matches the whole path relative to `path`: `*.py` finds
        .py files directly in it, `**/*.py` at every depth, `src/**` everything under src.

        Args:
            pattern: The glob pattern, e.g. "**/*.py" or "src/**/test_*.{py,js}".
            path: The directory to search.
        """
        pattern, path = search.split_pattern(text_argument("pattern", pattern), path_argument(path))
        if not pattern or "\0" in pattern:
            raise BadArgument("pattern must be a non-empty glob pattern without NUL characters")
        env = {
            "PRAISONAI_PATH": search.search_root(path, self._wd),
            "PRAISONAI_REGEX": search.glob_regex(pattern),
        }
        result = await self._search(search.GLOB_COMMAND, env)
        if result.exit_code == search.NOT_A_DIRECTORY:
            raise BadArgument(f"{path} is not a directory on the instance")
        found = search.Capped.parse(result.stdout)
        if not found.lines:
            return _ok(f"No files match {pattern!r} under {path}")
        paths = [search.shown(path, ".", line) for line in found.lines]
        return _ok("\n".join(paths) + _more(found.left_out, "paths", "narrow the pattern or the path"))

    async def grep(
        self, pattern: str, path: str = ".", glob: str | None = None, ignore_case: bool = False
    ) -> ToolOutcome:
        """Search file contents with an extended regular expression (grep -E); shows each matching
        line as path:line number:text, at most 300 lines. Relative paths start at {working_dir};
        binary files and .git directories are skipped.

        Args:
            pattern: The regular expression, e.g. "def \\w+\\(" or "TODO|FIXME".
            path: The file or directory to search (directories recursively).
            glob: Only search files whose name matches this glob, e.g. "*.py".
            ignore_case: Match without regard to case.
        """
        pattern, path = text_argument("pattern", pattern), path_argument(path)
        if not pattern or "\0" in pattern:
            raise BadArgument("pattern must be a non-empty regular expression without NUL characters")
        if glob is not None and (not text_argument("glob", glob) or "\0" in glob):
            raise BadArgument("glob must be a non-empty file name pattern without NUL characters")
        if not isinstance(ignore_case, bool):
            raise BadArgument(f"ignore_case must be true or false, not {ignore_case!r}")
        searched = search.search_root(path, self._wd)
        env = {"PRAISONAI_PATTERN": pattern, "PRAISONAI_PATH": searched, "PRAISONAI_GLOB": glob or ""}
        result = await self._search(search.grep_command(ignore_case=ignore_case, only=glob is not None), env)
        *problems, status = result.stderr.rstrip("\n").split("\n")
        found = search.Capped.parse(result.stdout)
        if not found.lines and status != "1":  # 1: no line matched; 2 with matches: some files unreadable
            return _error(f"grep failed: {problems[0] if problems else f'exit status {status}'}")
        if not found.lines:
            return _ok(f"No matches for {pattern!r} in {path}")
        lines = [search.shown(path, searched, line) for line in found.lines]
        unread = f"\n[{len(problems)} could not be read: {problems[0]}]" if problems else ""
        return _ok(
            "\n".join(lines)
            + _more(found.left_out, "matching lines", "narrow the pattern, path or glob")
            + unread
        )

    async def _search(self, command: str, env: Mapping[str, str]) -> ExecResult:
        result = await self._sandbox.exec(
            command, cwd=self._wd, env=env, timeout=search.SEARCH_TIMEOUT_S, max_output=MAX_TOOL_OUTPUT_BYTES
        )
        if result.timed_out:
            raise BadArgument(
                f"the search took longer than {search.SEARCH_TIMEOUT_S}s; narrow the path or pattern"
            )
        return result

    def _at(self, path: str) -> str:
        """``path`` in the instance: relative ones start at the working dir."""
        return posixpath.join(self._wd, path)


def _more(left_out: int, what: str, advice: str) -> str:
    return f"\n[{left_out} more {what} not shown; {advice}]" if left_out else ""
