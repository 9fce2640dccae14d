"""The four tools an agent gets on a shared instance, as plain sync functions the model can call.

They never return an empty string (``(no output)``), report failures as ``Error (exit N): …`` or
``Error: …`` text the model can act on, write files byte-exact through the provider's file API
(never through a command line), and record every command and write in the audit log.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from praisonai import _portal
from praisonai._errors import PraisonAIError

if TYPE_CHECKING:
    from praisonai.managed.shared import SharedCompute

#: Seconds a command may run unless the model asks for another limit.
DEFAULT_TOOL_TIMEOUT_S = 120
NO_OUTPUT = "(no output)"
TOOL_NAMES = ("execute_command", "read_file", "write_file", "list_files")


def tools_for(shared: SharedCompute, agent: str) -> list[Callable[..., str]]:
    """``execute_command``, ``read_file``, ``write_file`` and ``list_files`` for agent ``agent``."""

    def execute_command(command: str, timeout: int = DEFAULT_TOOL_TIMEOUT_S) -> str:
        """Run a shell command on the remote Linux instance shared by the team and return its output.

        Your shell session persists between calls (cd, exported variables), separate from the
        other agents' sessions; files are shared with them.

        Args:
            command: The shell command line to run.
            timeout: Seconds before the command is stopped.
        """
        try:
            shared.ensure()  # the first call of any agent provisions the instance, once
            result = _portal.call(shared._run, agent, command, float(timeout))
        except PraisonAIError as exc:
            return f"Error: {exc}"
        output = _joined(result.stdout, result.stderr)
        if result.timed_out:
            return f"Error (timed out after {timeout}s): {output or NO_OUTPUT}"
        if result.exit_code != 0:
            return f"Error (exit {result.exit_code}): {output or NO_OUTPUT}"
        return output or NO_OUTPUT

    def read_file(path: str) -> str:
        """Read a text file on the shared remote instance (relative paths start at the workspace).

        Args:
            path: The file to read.
        """
        try:
            shared.ensure()
            data = _portal.call(shared._read, agent, path)
        except (PraisonAIError, OSError, ValueError) as exc:
            return f"Error: {exc}"
        return data.decode("utf-8", "replace") or "(empty file)"

    def write_file(path: str, content: str) -> str:
        """Write a file on the shared remote instance exactly as given (no newline is added);
        parent directories are created. Relative paths start at the workspace.

        Args:
            path: The file to write.
            content: The whole content of the file.
        """
        data = content.encode()
        try:
            shared.ensure()
            _portal.call(shared._write, agent, path, data)
        except (PraisonAIError, OSError) as exc:
            return f"Error: {exc}"
        return f"Wrote {len(data)} bytes to {path}"

    def list_files(path: str = ".") -> str:
        """List a directory on the shared remote instance (relative paths start at the workspace).

        Args:
            path: The directory to list.
        """
        try:
            shared.ensure()
            result = _portal.call(shared._list, agent, path)
        except PraisonAIError as exc:
            return f"Error: {exc}"
        if result.exit_code != 0:
            return f"Error (exit {result.exit_code}): {_joined(result.stdout, result.stderr) or NO_OUTPUT}"
        return result.stdout.strip() or "(empty directory)"

    return [execute_command, read_file, write_file, list_files]


def list_command(path: str) -> str:
    """One entry a line, directories marked with a trailing slash, hidden files included."""
    return f"ls -1Ap -- {shlex.quote(path)}"


def _joined(stdout: str, stderr: str) -> str:
    parts = [s.rstrip("\n") for s in (stdout, stderr) if s.strip()]
    return "\n".join(parts)


def tool_name(tool: Any) -> str:
    return str(getattr(tool, "__name__", ""))
