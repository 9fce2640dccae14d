"""SharedCompute: one remote instance for a whole team of agents, while orchestration stays local.

::

    with SharedCompute("docker") as shared:
        shared.attach([writer, reviewer])     # their shell and file tools now run in the instance
        writer.start("write report.md");  reviewer.start("review report.md")
    # the instance is gone and the agents have their own tools and prompts back

The instance is provisioned lazily, once, on the first tool call (or :meth:`ensure`), under a lock
that holds across threads and async tasks, so parallel steps making their first call together
share it. The config follows ``.praisonai/environment.yaml`` like every other provisioning path
(explicit ``config`` fields win). Each agent gets its own shell session (its own cwd) on the
instance, created once however many of its calls arrive together; calls made at the same time
queue in it, each with its own output. Files are shared. Every command and file write is
recorded, with its agent, in :attr:`SharedCompute.audit`. Leaving the ``with`` (also on an
exception) or :meth:`shutdown` restores the agents and removes the instance; shutdown is
idempotent.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread

from praisonai import _portal
from praisonai._errors import SandboxClosedError
from praisonai._types import ExecResult, SessionResult
from praisonai.compute.base import ComputeProvider
from praisonai.managed._tools import TOOL_NAMES, list_command, tool_name, tools_for
from praisonai.runtime.session import ShellSession
from praisonai.sandbox import AsyncSandbox
from praisonai.sandbox.provisioning import ProvisionPlan, plan

#: Added to the system prompt of every attached agent.
CAPABILITY_NOTE = (
    "Your tools execute_command, read_file, write_file and list_files run on a remote Linux "
    "instance shared by your team, not on the machine you reason on: files written there are seen "
    "by the other agents, and your own shell session keeps its working directory between commands."
)


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One command or file write on the shared instance, and which agent made it."""

    at: float
    agent: str
    action: str  # "exec" | "write_file"
    target: str  # the command line, or the path
    outcome: str  # "exit 0", "timed out", "1024 bytes"


@dataclass
class _Attached:
    agent: Any
    tools: list[Any]
    instructions: str


class SharedCompute:
    """One lazily provisioned instance shared by agents; see the module docstring.

    ``compute``: a provider name, a provider object, or ``None`` (the environment file's backend,
    else the default). ``config``: explicit fields over the environment file. ``environment``:
    ``None`` finds the file from the working directory, ``False`` reads none, a path reads that.
    """

    def __init__(
        self,
        compute: object = None,
        config: object = None,
        *,
        environment: str | os.PathLike[str] | bool | None = None,
    ) -> None:
        self._compute = compute
        self._config = config
        self._environment = environment
        #: How the instance was made (effective config, environment file, provider), once it is.
        self.plan: ProvisionPlan | None = None
        self.provider: ComputeProvider | None = None
        self.instance_id: str | None = None
        self.audit: list[AuditEntry] = []
        self._lock = threading.Lock()
        self._sessions: dict[str, ShellSession] = {}
        self._sessions_lock = threading.Lock()
        self._attached: list[_Attached] = []
        self._closed = False

    # ---- lifecycle -------------------------------------------------------------------------

    def ensure(self) -> str:
        """The instance's id, provisioning it on the first call (once, whatever the concurrency)."""
        with self._lock:
            if self._closed:
                raise SandboxClosedError("this SharedCompute was shut down", op="exec")
            if self.instance_id is None:  # the one provisioning path, as Sandbox.create takes it
                chosen = plan(self._compute, self._config, environment=self._environment)
                sandbox = _portal.call(AsyncSandbox.from_plan, chosen)
                self.plan, self.provider, self.instance_id = chosen, chosen.provider, sandbox.id
            return self.instance_id

    async def aensure(self) -> str:
        """:meth:`ensure` for async callers (the wait happens in a worker thread)."""
        return await anyio.to_thread.run_sync(self.ensure)

    def shutdown(self) -> None:
        """Restore the attached agents, close the sessions and remove the instance. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for record in reversed(self._attached):
                record.agent.tools[:] = record.tools
                record.agent.instructions = record.instructions
            self._attached.clear()
            if self.provider is not None and self.instance_id is not None:
                _portal.call(self._teardown, self.provider, self.instance_id)

    async def _teardown(self, provider: ComputeProvider, instance_id: str) -> None:
        sessions, self._sessions = list(self._sessions.values()), {}
        with anyio.CancelScope(shield=True):
            for session in sessions:
                await session.close()
            await provider.shutdown(instance_id)

    def __enter__(self) -> SharedCompute:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    async def __aenter__(self) -> SharedCompute:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await anyio.to_thread.run_sync(self.shutdown)

    # ---- agents ----------------------------------------------------------------------------

    def attach(self, agents: Iterable[Any]) -> None:
        """Give each agent the four tools bound to this instance and the capability note.

        Same-named tools of the agent are replaced in place, the others kept; an agent with its
        own ``backend`` is left alone. Everything is restored on :meth:`shutdown`.
        """
        for agent in agents:
            if getattr(agent, "backend", None) is not None or any(r.agent is agent for r in self._attached):
                continue
            self._attached.append(_Attached(agent, list(agent.tools), agent.instructions))
            ours = {tool_name(t): t for t in tools_for(self, agent.name)}
            agent.tools[:] = [ours.pop(tool_name(t), t) for t in agent.tools] + list(ours.values())
            agent.instructions = f"{agent.instructions}\n\n{CAPABILITY_NOTE}".strip()

    # ---- what the tools call (on the portal loop, after ensure()) ---------------------------

    async def _run(self, agent: str, command: str, timeout: float) -> SessionResult:
        session = await self._session(agent)
        result = await session.run(command, timeout=timeout)
        outcome = "timed out" if result.timed_out else f"exit {result.exit_code}"
        self.audit.append(AuditEntry(time.time(), agent, "exec", command, outcome))
        return result

    async def _session(self, agent: str) -> ShellSession:
        """The agent's session: the first of concurrent first calls opens it, the others share it."""
        provider, instance_id = self._live()
        session = self._sessions.get(agent)
        if session is None:
            opened = await provider.open_session(instance_id)
            with self._sessions_lock:  # a call that opened one meanwhile wins; ours never started
                session = self._sessions.setdefault(agent, opened)
        return session

    async def _read(self, agent: str, path: str) -> bytes:
        provider, instance_id = self._live()
        return await provider.read_file(instance_id, path)

    async def _write(self, agent: str, path: str, data: bytes) -> None:
        provider, instance_id = self._live()
        await provider.write_file(instance_id, path, data)
        self.audit.append(AuditEntry(time.time(), agent, "write_file", path, f"{len(data)} bytes"))

    async def _list(self, agent: str, path: str) -> ExecResult:
        provider, instance_id = self._live()
        return await provider.execute(instance_id, list_command(path), timeout=60)

    def _live(self) -> tuple[ComputeProvider, str]:
        if self._closed or self.provider is None or self.instance_id is None:
            raise SandboxClosedError("the shared instance is not running", op="exec")
        return self.provider, self.instance_id


__all__ = ["CAPABILITY_NOTE", "TOOL_NAMES", "AuditEntry", "SharedCompute"]
