"""A ``self_hosted`` environment: Anthropic runs the agent loop, the agent toolset (bash, read,
write, edit, glob, grep) runs on OUR instance (docker, ssh, e2b, … through
:class:`~praisonai.managed.instance._tools.InstanceTools`).

How a turn gets its built-in tool calls run here: while the turn runs, :func:`serving` runs the
SDK's ``SessionToolRunner`` (``client.beta.sessions.events.tool_runner``) for THAT session only,
with :func:`agent_tools` as its tools. The runner follows the session's stream (reconnecting and
rebuilding its view from ``events.list``), runs each ``agent.tool_use`` the session waits on
(``evaluated_permission`` ``allow``, or ``ask`` once a ``user.tool_confirmation`` allowed it; a
denied call never runs), and posts ``user.tool_result {tool_use_id, content, is_error}``.
``agent.custom_tool_use`` calls are not ours to answer here: no tool of that name is given to the
runner, so it posts nothing for them and the turn loop answers them.

Why not the work queue (``environments.work.poll/ack/heartbeat/stop``, the SDK's
``EnvironmentWorker``):

- A poll hands out the next work item of the WHOLE environment. Our processes share one
  environment per config hash, so a process would claim another process's session, whose
  instance it does not have; the queue has no "give it back" (``stop`` ends the item).
- poll, ack and heartbeat take the environment key (``sk-ant-oat01-…``, made in the Console),
  not the API key a ManagedAgent has; ``work.retrieve``/``update`` take the API key and refuse
  the environment key. The runner itself works on any credential the sessions endpoints accept.
- A work item is the wake-up call for a worker that has no session yet ("queued when sessions are
  created or when long-dormant sessions receive new messages"); ours already has the session and
  its instance, and serves it exactly while its turn runs.

What this relies on, unverified against the live API (a live test would tell): that a session's
built-in calls reach ``user.tool_result`` from a runner that never claimed the work item. Items
we leave unclaimed stay queued for the service to expire; a separate ``EnvironmentWorker`` run on
the same environment WOULD claim them and run the calls on its own host, so do not run one there.
The docs: a call no runner answers within 120 s gets an error result from the service.

Containment: file tools (read, write, edit, glob, grep) refuse a path outside the working dir
(after normalising ``..``; symlinks inside it are followed by the instance). bash runs in the
instance like every command there: the instance is its boundary. Unlike the API's bash, each
call is a new shell (``cd`` and variables do not carry over; ``restart`` has nothing to do).
read's ``view_range`` slices the text InstanceTools gives (a file over 1 MiB comes as its head
and tail, so lines in the cut-out middle are not reachable that way).

Not there on a self-hosted environment (the docs; the README should say it): the environment has
no ``networking`` or ``packages`` (its config is ``{type: self_hosted}`` only: the instance's own
network and image apply); session ``resources`` (files, GitHub repositories) are not mounted by
Anthropic, and memory stores and the agent's skills are materialised by the SDK's
``EnvironmentWorker`` only, not by this runner (so not here); vault environment-variable
credentials are not supported. web_fetch, web_search and MCP tools are not the worker's (the
SDK's toolset has no implementation of the first two; MCP runs server-side). A call no runner
answers within 120 s becomes an error result, so a turn on such an environment must run inside
:func:`serving`.
"""

from __future__ import annotations

import posixpath
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Final

import anyio

from praisonai._errors import ConfigError, PraisonAIError
from praisonai.managed.hosted._client import api_errors
from praisonai.managed.instance._search import split_pattern
from praisonai.managed.instance._tools import InstanceTools, ToolOutcome

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic
    from anthropic.lib.tools import BetaAsyncFunctionTool
    from anthropic.lib.tools._beta_session_runner import SessionToolRunner

#: bash's default and longest timeout, the SDK's own (below its runner's 325 s per call, so the
#: command reports its own timeout).
BASH_TIMEOUT_S: Final = 295.0


def agent_tools(tools: InstanceTools) -> list[BetaAsyncFunctionTool[Any]]:
    """bash, read, write, edit, glob and grep with the API's input schemas, each run through
    ``tools`` on its instance. A failure (a bad argument, a path outside the working dir, a
    non-zero exit) raises the SDK's ``ToolError`` with one sentence, which the runner posts as
    ``is_error: true``."""
    from anthropic.lib.tools import beta_async_tool
    from anthropic.types.beta import (
        BetaManagedAgentsAgentToolset20260401BashInput as BashInput,
    )
    from anthropic.types.beta import (
        BetaManagedAgentsAgentToolset20260401EditInput as EditInput,
    )
    from anthropic.types.beta import (
        BetaManagedAgentsAgentToolset20260401GlobInput as GlobInput,
    )
    from anthropic.types.beta import (
        BetaManagedAgentsAgentToolset20260401GrepInput as GrepInput,
    )
    from anthropic.types.beta import (
        BetaManagedAgentsAgentToolset20260401ReadInput as ReadInput,
    )
    from anthropic.types.beta import (
        BetaManagedAgentsAgentToolset20260401WriteInput as WriteInput,
    )

    box = _Box(tools)
    return [
        beta_async_tool(name="bash", input_schema=BashInput)(box.bash),
        beta_async_tool(name="read", input_schema=ReadInput)(box.read),
        beta_async_tool(name="write", input_schema=WriteInput)(box.write),
        beta_async_tool(name="edit", input_schema=EditInput)(box.edit),
        beta_async_tool(name="glob", input_schema=GlobInput)(box.glob),
        beta_async_tool(name="grep", input_schema=GrepInput)(box.grep),
    ]


@asynccontextmanager
async def serving(
    client: AsyncAnthropic, *, environment_id: str, session_id: str, tools: InstanceTools
) -> AsyncIterator[None]:
    """While the block runs, the built-in tool calls of ``session_id`` run on our instance;
    leaving the block stops serving cleanly (a running call is cancelled, its process tree killed
    in the instance, and an error result posted for it; no thread or task is left).

    Raises:
        ConfigError: the session is not in ``environment_id``.
        PraisonAIError: (translated from the SDK) the session could not be read, or the runner
            stopped on an error the API gave; the block is cancelled and this is raised on exit.
    """
    with api_errors(f"session {session_id}"):
        session = await client.beta.sessions.retrieve(session_id)
    if session.environment_id != environment_id:
        raise ConfigError(
            f"session {session_id} is in environment {session.environment_id}, not {environment_id}",
            op="managed",
        )
    runner = client.beta.sessions.events.tool_runner(session_id, tools=agent_tools(tools), max_idle=None)
    failed: list[PraisonAIError] = []
    raised: BaseException | None = None
    async with anyio.create_task_group() as group:
        group.start_soon(_run, runner, failed, group.cancel_scope)
        try:
            yield
        except anyio.get_cancelled_exc_class():
            raise  # ours (the runner failed) ends in the group; an outer one goes on out
        except BaseException as exc:  # raised again below: from inside, the group would wrap it
            raised = exc
        finally:
            group.cancel_scope.cancel()
    if raised is not None:
        raise raised
    if failed:
        raise failed[0]


async def _run(runner: SessionToolRunner, failed: list[PraisonAIError], scope: anyio.CancelScope) -> None:
    """Drive the runner until cancelled (or until the session ends); a refusal from the API stops
    the block that serves it (a turn whose tools nobody runs would only wait)."""
    try:
        with api_errors(f"running the tools of session {runner.session_id}"):
            async for _ in runner:
                pass
    except PraisonAIError as exc:
        failed.append(exc)
        scope.cancel()


class _Box:
    """The toolset's six tools on one :class:`InstanceTools`; each takes the API's input fields."""

    def __init__(self, tools: InstanceTools) -> None:
        self._tools = tools
        self._wd = posixpath.normpath(tools.working_dir)  # compared with normalised paths below

    async def bash(
        self, command: str | None = None, restart: bool | None = None, timeout_ms: int | None = None
    ) -> str:
        """Run a shell command on the instance, in the working dir."""
        if not command:
            if restart:  # no persistent shell to restart: each command is a new one
                return "bash session restarted"
            raise _error("bash: command is required")
        seconds = BASH_TIMEOUT_S
        if timeout_ms is not None and timeout_ms > 0:
            seconds = min(timeout_ms / 1000, BASH_TIMEOUT_S)
        return await self._call("execute_command", command=command, timeout=seconds)

    async def read(self, file_path: str, view_range: list[int] | None = None) -> str:
        """Read a text file; ``view_range`` [first line, last line] (1-based; last -1: to the end)."""
        if view_range and len(view_range) != 2:
            raise _error("read: view_range must be [start_line, end_line]")
        text = await self._call("read_file", path=self._inside("read", file_path))
        if not view_range:
            return text
        lines = text.split("\n")
        first, last = view_range
        return "\n".join(lines[max(0, first - 1) : last if last > 0 else len(lines)])

    async def write(self, file_path: str, content: str) -> str:
        """Write a file (parent directories are made)."""
        return await self._call("write_file", path=self._inside("write", file_path), content=content)

    async def edit(
        self, file_path: str, old_string: str, new_string: str, replace_all: bool | None = None
    ) -> str:
        """Replace exact text in a file (once, unless ``replace_all``)."""
        path = self._inside("edit", file_path)
        return await self._call(
            "edit_file",
            path=path,
            old_string=old_string,
            new_string=new_string,
            replace_all=bool(replace_all),
        )

    async def glob(self, pattern: str, path: str | None = None) -> str:
        """Files whose path matches ``pattern`` under ``path`` (the working dir by default)."""
        if not isinstance(pattern, str) or ".." in pattern.split("/"):
            raise _error("glob: the pattern must be a string without '..' components")
        # An absolute pattern's fixed leading directories are where it searches: check those.
        pattern, root = split_pattern(pattern, path or self._wd)
        return await self._call("glob", pattern=pattern, path=self._inside("glob", root))

    async def grep(self, pattern: str, path: str | None = None) -> str:
        """Lines matching the regular expression under ``path`` (the working dir by default)."""
        return await self._call("grep", pattern=pattern, path=self._inside("grep", path or self._wd))

    def _inside(self, tool: str, path: str) -> str:
        """``path`` as an absolute path in the working dir; ToolError when it leads outside."""
        if not isinstance(path, str) or not path or "\0" in path:
            raise _error(f"{tool}: the path must be a non-empty string")
        full = posixpath.normpath(posixpath.join(self._wd, path))
        if full != self._wd and not full.startswith(self._wd.rstrip("/") + "/"):
            raise _error(f"{tool}: {path:.200} is outside the workspace {self._wd}")
        return full

    async def _call(self, name: str, **arguments: Any) -> str:
        outcome: ToolOutcome = await self._tools.call(name, arguments)
        if outcome.is_error:
            raise _error(outcome.content)
        return outcome.content


def _error(message: str) -> Exception:
    """The SDK's ToolError: the runner posts its text as the result, with ``is_error: true``."""
    from anthropic.lib.tools import ToolError

    return ToolError(message)
