"""The tools an agent gets on a shared instance, as plain sync functions the model can call;
what they answer is :mod:`praisonai.managed.instance._answers`'s (never an exception). The four
PraisonAI names are written here; ``edit_file``, ``grep`` and ``glob`` are the managed loop's own
(:class:`~praisonai.managed.instance._tools.InstanceTools`), so both loops offer one tool set."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from praisonai import _portal
from praisonai._types import ExecResult, InstanceInfo, SessionResult
from praisonai.managed.instance._answers import (
    DEFAULT_TOOL_TIMEOUT_S,
    TOOL_FAILURES,
    command_answer,
    file_answer,
    for_model,
    listing_answer,
    path_argument,
    read_arguments,
    seconds_argument,
    text_argument,
    tool_result_limit,
)
from praisonai.sandbox import AsyncSandbox

if TYPE_CHECKING:
    from praisonai.compute.base import ComputeProvider

#: The managed loop's tools a shared instance's agents get as well, written once in InstanceTools.
LOOP_TOOL_NAMES = ("edit_file", "grep", "glob")
#: PraisonAI's four, which ``build_tools`` returns (its users unpack them); ``attach`` gives an
#: agent these and LOOP_TOOL_NAMES, replacing the agent's own tools of the same names.
BRIDGED_TOOL_NAMES = ("execute_command", "read_file", "write_file", "list_files")
#: ``execute_command``'s description on a provider without persistent shell sessions.
SESSIONLESS_COMMAND_DOC = """Run a shell command on the team's shared remote instance and return its output.

        Each call runs in its own shell, started in the working directory: cd and exported
        variables do not carry over to the next call, so chain dependent steps in one command
        line (cd dir && make). Files are shared with the other agents.

        Args:
            command: The shell command line to run.
            timeout: Seconds before the command is stopped.
        """


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One command or file write on the shared instance, and which agent made it."""

    at: float
    agent: str  # "run_command" for SharedCompute.run_command
    action: str  # "exec" | "write_file" | "edit_file"
    target: str  # the command line, or the path
    outcome: str  # "exit 0", "timed out", "1024 bytes"


class ToolHost(Protocol):
    """What the tools need of :class:`~praisonai.managed.shared.SharedCompute`: its instance,
    provisioned on first use, and each agent's command, read, write and list on it."""

    @property
    def has_sessions(self) -> bool: ...
    def ensure(self) -> str: ...
    async def _run(self, agent: str, command: str, timeout: float) -> ExecResult | SessionResult: ...
    async def _read(self, agent: str, path: str) -> bytes: ...
    async def _write(self, agent: str, path: str, data: bytes) -> None: ...
    async def _list(self, agent: str, path: str) -> ExecResult: ...
    @property
    def working_dir(self) -> str: ...
    def _live(self) -> tuple[ComputeProvider, str]: ...
    @property
    def audit(self) -> list[AuditEntry]: ...


def tools_for(shared: ToolHost, agent: str) -> list[Callable[..., str]]:
    """``execute_command``, ``read_file``, ``write_file`` and ``list_files`` for agent ``agent``."""
    tool_result_limit()  # a bad PRAISONAI_TOOL_RESULT_CHARS is said before any model request

    @_answers_errors
    def execute_command(command: str, timeout: int = DEFAULT_TOOL_TIMEOUT_S) -> str:
        """Run a shell command on the remote Linux instance shared by the team and return its output.

        Your shell session persists between calls (cd, exported variables), separate from the
        other agents' sessions; files are shared with them. Calls made at the same time run one
        after the other.

        Args:
            command: The shell command line to run.
            timeout: Seconds before the command is stopped.
        """
        seconds = seconds_argument(timeout)
        shared.ensure()  # the first call of any agent provisions the instance, once
        result = _portal.call(shared._run, agent, text_argument("command", command), seconds)
        return command_answer(result, timeout)

    @_answers_errors
    def read_file(path: str, offset: int = 0, limit: int | None = None) -> str:
        """Read a text file on the shared remote instance (relative paths start at the workspace).

        A file longer than the tool-result limit (30 000 characters unless set otherwise) comes
        back as its head and tail with a note on the bytes left out; read those with offset and
        limit.

        Args:
            path: The file to read.
            offset: The byte to start at (0: the beginning).
            limit: How many bytes to read, at most the limit (default: the rest of the file).
        """
        path, start, size = read_arguments(path, offset, limit)
        shared.ensure()
        return file_answer(path, _portal.call(shared._read, agent, path), start, size)

    @_answers_errors
    def write_file(path: str, content: str) -> str:
        """Write a file on the shared remote instance exactly as given (no newline is added);
        parent directories are created. Relative paths start at the workspace.

        Args:
            path: The file to write.
            content: The whole content of the file.
        """
        path = path_argument(path)
        data = text_argument("content", content).encode()
        shared.ensure()
        _portal.call(shared._write, agent, path, data)
        return f"Wrote {len(data)} bytes to {path}"

    @_answers_errors
    def list_files(path: str = ".") -> str:
        """List a directory on the shared remote instance (relative paths start at the workspace).

        Args:
            path: The directory to list.
        """
        path = path_argument(path)
        shared.ensure()
        return listing_answer(_portal.call(shared._list, agent, path))

    if not shared.has_sessions:
        execute_command.__doc__ = SESSIONLESS_COMMAND_DOC
    return [execute_command, read_file, write_file, list_files]


def loop_tools_for(shared: ToolHost, agent: str) -> list[Callable[..., str]]:
    """``edit_file``, ``grep`` and ``glob`` for agent ``agent``: the managed loop's own."""
    return [_loop_tool(shared, agent, name) for name in LOOP_TOOL_NAMES]


def _loop_tool(shared: ToolHost, agent: str, name: str) -> Callable[..., str]:
    """The managed loop's tool ``name`` as a sync function on the shared instance: the same
    parameters, description and answers (relative paths start at the working dir); an edit is
    recorded in the audit as a write."""
    from praisonai.managed.instance._tools import InstanceTools, tool_signature, tool_text

    signature = tool_signature(name)

    def tool(*args: Any, **kwargs: Any) -> str:
        try:
            arguments = signature.bind(*args, **kwargs).arguments
        except TypeError as exc:
            return f"Error: {name} takes ({', '.join(signature.parameters)}): {exc}"
        shared.ensure()
        provider, instance_id = shared._live()
        sandbox = AsyncSandbox(provider, InstanceInfo(instance_id, provider.name), owned=False)
        outcome = _portal.call(InstanceTools(sandbox, shared.working_dir).call, name, arguments)
        if name == "edit_file" and not outcome.is_error:
            shared.audit.append(
                AuditEntry(time.time(), agent, "edit_file", str(arguments["path"]), outcome.content)
            )
        return outcome.content  # already within the tool-result limit

    tool.__name__ = tool.__qualname__ = name
    tool.__doc__ = tool_text(name, shared.working_dir)
    tool.__signature__ = signature  # type: ignore[attr-defined]
    tool.__annotations__ = {p.name: p.annotation for p in signature.parameters.values()} | {"return": "str"}
    return tool


def _answers_errors(tool: Callable[..., str]) -> Callable[..., str]:
    """The tool returns ``Error: …`` for a bad argument or a failed operation instead of raising,
    and its answer within the tool-result limit (``for_model``)."""

    @functools.wraps(tool)
    def answered(*args: Any, **kwargs: Any) -> str:
        try:
            return for_model(tool(*args, **kwargs))
        except TOOL_FAILURES as exc:
            return f"Error: {exc}"

    return answered


def tool_name(tool: Any) -> str:
    return str(getattr(tool, "__name__", ""))
