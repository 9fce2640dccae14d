"""SharedCompute: one remote instance for a whole team of agents, while orchestration stays local.

::

    with SharedCompute("docker") as shared:
        shared.attach([writer, reviewer])     # their shell and file tools now run in the instance
        writer.start("write report.md");  reviewer.start("review report.md")
    # the instance is gone and the agents have their own tools and prompts back

The instance is provisioned lazily, once, on the first tool call (or :meth:`ensure`), under a lock
that holds across threads and async tasks, so parallel steps making their first call together
share it. The config follows ``.praisonai/environment.yaml`` like every other provisioning path:
the fields ``config`` sets win, then ``working_dir`` and ``idle_timeout_s`` when they are passed,
then the file, then the defaults. Each agent gets its own shell session (its own cwd) on the
instance, created once however many of its calls arrive together; calls made at the same time
queue in it, each with its own output. Files are shared. Every command and file write is
recorded, with its agent, in :attr:`SharedCompute.audit`. Leaving the ``with`` (also on an
exception) or :meth:`shutdown` restores the agents and removes the instance (kept, to stop by its
idle policy, with ``auto_shutdown=False``); shutdown is idempotent. After it ``instance_id`` is
``None`` and the object can be used again: the next tool call or :meth:`ensure` provisions a new
instance, and agents can be attached again. PraisonAI's names work unchanged:
``SharedCompute(compute, config, working_dir, auto_shutdown, idle_timeout_s)``,
:meth:`build_tools`, :meth:`ensure_provisioned`, :meth:`run_command`, :attr:`instance_id`,
:attr:`provider_name`, ``attach(agents, override_declared=...)``, :data:`CAPABILITY_PROMPT`,
:data:`BRIDGED_TOOL_NAMES`::

    shared = SharedCompute("docker")
    execute_command, read_file, write_file, list_files = shared.build_tools()
    r = shared.run_command("python3 --version", timeout=30)     # r["exit_code"], r["stdout"]
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread

from praisonai import _portal
from praisonai._errors import SandboxClosedError
from praisonai._types import UNSET, Capability, ExecResult, SessionResult, Unset
from praisonai.compute.base import ComputeProvider
from praisonai.compute.config import ComputeConfig
from praisonai.compute.foreign import ForeignProvider
from praisonai.compute.registry import provider_class, resolve_compute
from praisonai.compute.workspace import from_keywords
from praisonai.managed.instance._answers import command_answer, list_command
from praisonai.managed.shared._tools import (
    BRIDGED_TOOL_NAMES,
    AuditEntry,
    loop_tools_for,
    tool_name,
    tools_for,
)
from praisonai.managed.shared._workspace import diff_of, prepared
from praisonai.runtime.session import ShellSession
from praisonai.sandbox.provisioning import ProvisionPlan, plan

#: Appended to the backstory of every attached agent (PraisonAI's name). Models tend not to call
#: tools they do not believe can run anything; this tells them they can. True of every provider:
#: whether a shell session persists between calls is the execute_command tool's own description.
CAPABILITY_PROMPT = (
    "Your tools execute_command, read_file, write_file and list_files run on a remote Linux "
    "instance shared by your team, not on the machine you reason on. Use them for any shell, file "
    "or code-execution request; never claim you cannot run commands. Files written there are seen "
    "by the other agents in this run."
)
#: Added after it on a provider without persistent shell sessions (one written to PraisonAI's
#: protocol), where nothing carries over between commands.
SESSIONLESS_NOTE = (
    "Each command runs in its own shell, started in the working directory: cd and variables do "
    "not carry over to the next command, so chain them in one command line."
)


@dataclass
class _Attached:
    """An attached agent and what attach changed on it, to put back on shutdown."""

    agent: Callable[[], Any]  # a weak reference: an agent's own SharedCompute must not keep it alive
    tools: list[Any]
    prompt_field: str  # "backstory", or "instructions" for an agent without a backstory
    prompt_text: Any  # that field's value before attach (None included)

    def restore(self) -> None:
        agent = self.agent()
        if agent is not None:  # a collected agent has nothing left to restore
            agent.tools[:] = self.tools
            setattr(agent, self.prompt_field, self.prompt_text)


class SharedCompute:
    """One lazily provisioned instance shared by agents; see the module docstring.

    Args:
        compute: a provider name, a provider object, or ``None`` (the environment file's backend,
            else the default: docker, else local under bubblewrap; never this host unisolated,
            which only ``"local"`` named asks for). An unknown name, or a provider whose SDK is
            missing, is refused here; no isolated default, when tools are built or attached.
        config: the instance's fields (a dict, a ``ComputeConfig`` or PraisonAI's config object);
            the fields it sets win over everything else.
        working_dir, idle_timeout_s: PraisonAI's spelling of those config fields; used when passed
            and ``config`` does not set them (then over the environment file).
        auto_shutdown: ``True``: :meth:`shutdown` removes the instance. ``False``: it is left
            running and stops by its idle policy (``idle_timeout_s``). Unlike PraisonAI's, where the
            flag went into the provider's config and shutdown always removed the instance.
        environment: ``None`` finds the environment file from the working directory, ``False``
            reads none, a path reads that.
        workspace, repo, repo_token_env: a local tree uploaded into the working dir, or a git
            ``URL[@REF]`` cloned there (token from that variable); see :meth:`diff`.

    Raises:
        UnknownProviderError, MissingDependencyError: ``compute`` names no usable provider.
        ConfigError: ``config``, ``working_dir`` or ``idle_timeout_s`` is invalid.
        ProviderUnavailableError: (attach, build_tools, ensure) no compute named and no isolated
            default available.
    """

    def __init__(
        self,
        compute: object = None,
        config: object = None,
        working_dir: str | Unset = UNSET,
        auto_shutdown: bool = True,
        idle_timeout_s: int | Unset = UNSET,
        *,
        environment: str | os.PathLike[str] | bool | None = None,
        workspace: str | os.PathLike[str] | None = None,
        repo: str | None = None,
        repo_token_env: str | None = None,
    ) -> None:
        check_place(compute)
        #: What is put in the instance when it is made (``workspace``/``repo`` as resources).
        self.resources = from_keywords(workspace, repo, repo_token_env)
        self._compute = compute
        self._config = _explicit(config, working_dir=working_dir, idle_timeout_s=idle_timeout_s)
        self._environment = environment
        self.auto_shutdown = auto_shutdown
        #: How the instance was made (effective config, environment file, provider), once it is.
        self.plan: ProvisionPlan | None = None
        self.provider: ComputeProvider | None = None
        self.instance_id: str | None = None
        self.audit: list[AuditEntry] = []
        self._chosen: ProvisionPlan | None = None
        self._lock = threading.Lock()
        self._plan_lock = threading.Lock()
        self._sessions: dict[str, ShellSession] = {}
        self._sessions_lock = threading.Lock()
        self._attached: list[_Attached] = []

    # ---- lifecycle -------------------------------------------------------------------------

    def ensure(self) -> str:
        """The instance's id, provisioning it on the first call (once, whatever the concurrency)."""
        with self._lock:  # shutdown holds it too: a first use after a shutdown waits for it
            if self.instance_id is None:  # the one provisioning path, as Sandbox.create takes it
                chosen = self._planned()
                sandbox = _portal.call(prepared, chosen, self.resources)
                self.plan, self.provider, self.instance_id = chosen, chosen.provider, sandbox.id
            return self.instance_id

    def diff(self) -> str:
        """The working dir's changes since the workspace was uploaded or the repo cloned."""
        return _portal.call(diff_of, *self._live())

    def ensure_provisioned(self) -> str:
        """PraisonAI's name for :meth:`ensure`: the instance's id, provisioning it first if needed."""
        return self.ensure()

    async def aensure(self) -> str:
        """:meth:`ensure` for async callers (the wait happens in a worker thread)."""
        return await anyio.to_thread.run_sync(self.ensure)

    @property
    def provider_name(self) -> str:
        """The provider's name (``"docker"``, ``"local"``, …): the one the instance runs on, or will."""
        return self._planned().provider.provider_name

    @property
    def working_dir(self) -> str:
        """The directory commands start in and relative paths resolve against."""
        return self._planned().config.working_dir

    @property
    def has_sessions(self) -> bool:
        """Whether each agent gets a persistent shell session (the provider has them); without,
        each command is its own shell, started in the working directory."""
        return Capability.SESSIONS in self._planned().provider.capabilities

    def _planned(self) -> ProvisionPlan:
        """The provisioning plan, made once: the environment file read and the provider chosen."""
        with self._plan_lock:
            if self._chosen is None:
                self._chosen = plan(self._compute, self._config, environment=self._environment)
            return self._chosen

    def _check_default(self) -> None:
        """With no compute named, choose the provider now, before a model sees the tools: the
        default is never this host unisolated, and a refusal must come before any model call
        (``ProviderUnavailableError``, naming the ways out)."""
        if self._compute is None:
            self._planned()

    def shutdown(self) -> None:
        """Restore the attached agents, close the sessions and remove the instance (left to its
        idle policy with ``auto_shutdown=False``). Then :attr:`instance_id` is ``None``; the next
        use provisions a new instance. Idempotent."""
        with self._lock:
            for record in reversed(self._attached):
                record.restore()
            self._attached.clear()
            # Cleared first: a tool call still in flight gets "not running", never the old instance.
            instance_id, self.instance_id = self.instance_id, None
            if self.provider is not None and instance_id is not None:
                _portal.call(self._teardown, self.provider, instance_id)

    async def ashutdown(self) -> None:
        """:meth:`shutdown` for async callers, on any event loop (praisonai's own included)."""
        await anyio.to_thread.run_sync(self.shutdown)

    async def _teardown(self, provider: ComputeProvider, instance_id: str) -> None:
        sessions, self._sessions = list(self._sessions.values()), {}
        with anyio.CancelScope(shield=True):
            for session in sessions:
                await session.close()
            if self.auto_shutdown:
                await provider.shutdown(instance_id)

    def __enter__(self) -> SharedCompute:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    async def __aenter__(self) -> SharedCompute:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.ashutdown()

    # ---- PraisonAI's direct use, without agents ------------------------------------------------

    def build_tools(self, agent: str = "user") -> list[Callable[..., str]]:
        """``[execute_command, read_file, write_file, list_files]`` bound to this instance (the
        first call provisions it), attached to no agent. ``agent`` names their shell session and
        their entries in :attr:`audit`; tools built under one name share one session."""
        self._check_default()
        return tools_for(self, agent)

    def run_command(self, command: str, timeout: float | None = None) -> ExecResult:
        """Run ``command`` (``sh -c``) in the working directory of the instance, provisioning it
        first; blocking. Returns an :class:`~praisonai.ExecResult`, which also reads as PraisonAI's
        dict (``r["exit_code"]``, ``r["stdout"]``, ``r["stderr"]``).

        ``timeout``: seconds; ``None`` means the default limit (300 s), not "no limit" as in
        PraisonAI, where a hung command held its thread forever. At the limit the command's process
        tree is killed and the result has ``timed_out=True``. Not an agent's shell session: no
        ``cd`` or variable carries over between calls.
        """
        self.ensure()
        return _portal.call(self._exec, command, UNSET if timeout is None else timeout)

    @staticmethod
    def _format(result: ExecResult | dict[str, Any]) -> str:
        """What the tools tell the model of a result (``ExecResult`` or PraisonAI's dict); never empty."""
        return command_answer(result)

    # ---- agents ----------------------------------------------------------------------------

    def attach(
        self, agents: Iterable[Any], *, override_declared: bool = False, loop_tools: bool = False
    ) -> None:
        """Give each agent PraisonAI's four tools bound to this instance (with ``loop_tools``, the
        managed loop's ``edit_file``, ``grep`` and ``glob`` too: our teams and agents ask for them)
        and :data:`CAPABILITY_PROMPT`, appended to its ``backstory`` (which leads the system prompt
        of PraisonAI's agents, and follows ours: ``Agent.system_prompt``), else to ``instructions``.

        Same-named tools of the agent are replaced in place, the others kept. Left alone: an agent
        with its own ``backend``, one already attached, and one that names its own
        ``tools_run_on`` place (its choice outranks the run's) unless ``override_declared``.
        Everything is restored on :meth:`shutdown`.
        """
        self._check_default()
        for agent in agents:
            if getattr(agent, "backend", None) is not None or any(r.agent() is agent for r in self._attached):
                continue
            if getattr(agent, "tools_run_on", None) is not None and not override_declared:
                continue
            field = "backstory" if hasattr(agent, "backstory") else "instructions"
            text = getattr(agent, field)
            self._attached.append(_Attached(_weak(agent), list(agent.tools), field, text))
            extra = loop_tools_for(self, agent.name) if loop_tools else []
            ours = {tool_name(t): t for t in tools_for(self, agent.name) + extra}
            agent.tools[:] = [ours.pop(tool_name(t), t) for t in agent.tools] + list(ours.values())
            note = CAPABILITY_PROMPT if self.has_sessions else f"{CAPABILITY_PROMPT} {SESSIONLESS_NOTE}"
            setattr(agent, field, f"{text}\n\n{note}" if text else note)

    # ---- what the tools call (on the portal loop, after ensure()) ---------------------------

    async def _run(self, agent: str, command: str, timeout: float) -> SessionResult | ExecResult:
        """In the agent's session; on a provider without sessions, in a shell of its own that
        starts in the working dir (nothing carries over between commands)."""
        provider, instance_id = self._live()
        result: SessionResult | ExecResult
        if Capability.SESSIONS in provider.capabilities:
            result = await (await self._session(agent)).run(command, timeout=timeout)
        else:
            result = await provider.execute(instance_id, command, timeout)
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
        if isinstance(provider, ForeignProvider):  # by ``cat``, the read PraisonAI's providers answer
            return (await provider.read_text(instance_id, path)).encode()
        return await provider.read_file(instance_id, path)

    async def _write(self, agent: str, path: str, data: bytes) -> None:
        provider, instance_id = self._live()
        await provider.write_file(instance_id, path, data)
        self.audit.append(AuditEntry(time.time(), agent, "write_file", path, f"{len(data)} bytes"))

    async def _exec(self, command: str, timeout: float | Unset) -> ExecResult:
        provider, instance_id = self._live()
        result = await provider.execute(instance_id, command, timeout)
        outcome = "timed out" if result.timed_out else f"exit {result.exit_code}"
        self.audit.append(AuditEntry(time.time(), "run_command", "exec", command, outcome))
        return result

    async def _list(self, agent: str, path: str) -> ExecResult:
        provider, instance_id = self._live()
        return await provider.execute(instance_id, list_command(path), timeout=60)

    def _live(self) -> tuple[ComputeProvider, str]:
        if self.provider is None or self.instance_id is None:
            raise SandboxClosedError("the shared instance is not running", op="exec")
        return self.provider, self.instance_id


def check_place(compute: object) -> None:
    """Refuse a provider name that is unknown or whose SDK is missing, or an object that is no
    provider (one with part of PraisonAI's protocol is told what it lacks), now rather than as an
    error text at the first tool call (UnknownProviderError, MissingDependencyError, TypeError)."""
    if isinstance(compute, str):
        provider_class(compute)
    elif compute is not None:
        resolve_compute(compute)


def _explicit(config: object, **arguments: Any) -> ComputeConfig:
    """``config``'s fields, plus each argument the caller passed (not ``UNSET``) that it lacks.
    Only a value the caller passed overrides the environment file: ``SharedCompute("docker")``
    still takes ``working_dir`` from the file, and else ``ComputeConfig``'s default."""
    given = ComputeConfig.coerce(config)
    passed = {
        name: value
        for name, value in arguments.items()
        if value is not UNSET and name not in given.model_fields_set
    }
    if not passed:
        return given
    return ComputeConfig.coerce({**given.model_dump(include=set(given.model_fields_set)), **passed})


def _weak(agent: Any) -> Callable[[], Any]:
    try:
        return weakref.ref(agent)
    except TypeError:  # an object without weak references: held strongly, as before
        return lambda: agent


__all__ = [
    "BRIDGED_TOOL_NAMES",
    "CAPABILITY_PROMPT",
    "SESSIONLESS_NOTE",
    "AuditEntry",
    "SharedCompute",
    "check_place",
]
