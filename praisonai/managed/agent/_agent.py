"""ManagedAgent: an agent loop whose sessions persist and resume from any process.

::

    managed = ManagedAgent(compute="docker", config=LocalManagedConfig(model="gpt-4o-mini",
                           system="You are a coder.", packages={"pip": ["requests"]}))
    result = managed.run("Write fib.py, run it, print fib(20)")   # the loop here, tools in docker
    for event in managed.stream("now add tests"): ...            # the same session, event by event
    later = ManagedAgent.resume(result.session_id)                # any process, days later

The loop (:mod:`praisonai.managed.local._turn`) runs on praisonai's portal loop; the sync methods
block on it and the async ones await it from any event loop. Every event but text deltas is
written to the session store (:mod:`praisonai.managed.store`) before what it announces happens.
"""

from __future__ import annotations

import asyncio
import functools
import os
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from praisonai import _portal
from praisonai._errors import SessionBusyError
from praisonai._limits import DEFAULT_TURN_TIMEOUT_S, check_timeout
from praisonai.compute.lifecycle import owner_tag
from praisonai.llm.client import make_client
from praisonai.llm.types import LLMClient, api_key_for, resolve_model
from praisonai.managed.agent import _bridge
from praisonai.managed.agent._backend import choose_backend
from praisonai.managed.agent._praisonai_names import PraisonAINames
from praisonai.managed.config import (
    LocalManagedConfig,
    check_host_packages,
    compute_fields,
    config_record,
    resolve_tools,
)
from praisonai.managed.config._hosted import ManagedConfig
from praisonai.managed.config._workspace import instance_resources, with_workspace
from praisonai.managed.events import Event
from praisonai.managed.instance._source import InstanceSource, compute_from, compute_record
from praisonai.managed.live._result import ManagedResult
from praisonai.managed.live._session import LiveSession, ignore
from praisonai.managed.local._turn import Turn, TurnSetup
from praisonai.managed.store import AgentRecord, SessionRecord, SessionStore, open_store
from praisonai.managed.text import check_prompt
from praisonai.managed.tools_place import one_place

if TYPE_CHECKING:
    from praisonai.managed.fork import ForkResult
    from praisonai.managed.hosted._backend import HostedBackend
    from praisonai.managed.hosted._turn import HostedTurn


class ManagedAgent(PraisonAINames):
    """An agent whose loop runs here, tools on an instance, and whose sessions persist.

    Args:
        provider: ``"local"`` (this process runs the loop), ``"anthropic"`` (the loop runs on
            Claude Managed Agents; with ``compute`` named its tools run there), or ``None``: see
            :func:`choose_backend`, which also reads PraisonAI's older values (``"e2b"``, …:
            the loop here, its tools on that sandbox; with a ``DeprecationWarning``).
        compute: where the tools run: a provider name (``"docker"``), a provider object, or
            ``None`` (the environment file's backend, else docker, else local under bubblewrap;
            never this host unisolated unless ``"local"`` is named: else refused before any model
            call, ProviderUnavailableError); ``tools_run_on``: PraisonAI's spelling. An unknown
            name, or a provider whose SDK is missing, is refused here.
        config: a :class:`LocalManagedConfig` (hosted: a :class:`ManagedConfig`), or its fields.
        workspace, repo, repo_token_env: added to the config's ``resources`` (see
            :mod:`praisonai.compute.workspace`); put in the instance before the first model call.
        store: the sessions store (default: sqlite under ``PRAISONAI_HOME``).
        on_tool_confirmation: ``(ToolRequest) -> "allow" | "deny" | None`` (or a bool; may be
            async) for tools whose permission is ``ask``; ``None`` leaves the use pending and the
            turn ends with ``requires_action``. Without a callback such uses are denied.
        on_custom_tool: ``(name, input) -> result`` for the config's custom tools (may be async).
        api_key, base_url: for the model (default: the provider's variables, e.g. ``OPENAI_API_KEY``).
        environment: which ``.praisonai/environment.yaml`` (``None``: found from the working
            directory; ``False``: none); the config's ``environment`` wins when set.
        turn_timeout_s: seconds the turn waits for the remote (the model's API; hosted: the
            session's events) to send something new; keep-alives do not count. Past it the turn
            ends as an error (``RemoteTimeoutError``), the session kept; ``None``: no deadline.

    A session starts with the first turn and holds a *reference* to its instance: closing this
    object leaves the instance running until its idle policy stops it, so another process can
    :meth:`resume` the session on the same instance (or on a replacement, announced to the model).
    """

    def __init__(
        self,
        provider: str | None = None,
        compute: object = None,
        config: LocalManagedConfig | Mapping[str, Any] | None = None,
        store: SessionStore | None = None,
        on_tool_confirmation: Callable[..., Any] | None = None,
        on_custom_tool: Callable[..., Any] | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        environment: str | os.PathLike[str] | bool | None = None,
        tools_run_on: object = None,
        workspace: str | os.PathLike[str] | None = None,
        repo: str | None = None,
        repo_token_env: str | None = None,
        turn_timeout_s: float | None = DEFAULT_TURN_TIMEOUT_S,
    ) -> None:
        self.turn_timeout_s = check_timeout(turn_timeout_s, "turn_timeout_s", allow_zero=False)
        place = one_place("ManagedAgent", compute=compute, tools_run_on=tools_run_on)
        backend = choose_backend(provider, place)
        self.provider, compute = backend.loop, backend.compute
        hosted = self.provider == "anthropic"
        self.config = (ManagedConfig if hosted else LocalManagedConfig).coerce(config)
        self.config = with_workspace(self.config, hosted, workspace, repo, repo_token_env)
        if not hosted or compute is not None:  # hosted without compute: Anthropic's container
            check_host_packages(self.config, compute is not None)
        self.compute = compute
        self.on_tool_confirmation = self.config.on_tool_confirmation or on_tool_confirmation
        self.on_custom_tool = self.config.on_custom_tool or on_custom_tool
        self.plan = resolve_tools(self.config)
        self.session_id: str | None = None
        self._agent: AgentRecord | None = None  # the stored record of this config (agent_id)
        self.last_result: ManagedResult | None = None
        self._store = store
        model = backend.model(self.config.model)
        self._spec = None if hosted else resolve_model(model, base_url=base_url, api_key=api_key)
        self._hosted: HostedBackend | None = None
        if hosted:
            from praisonai.managed.hosted._backend import HostedBackend

            assert isinstance(self.config, ManagedConfig)
            self._hosted = HostedBackend(
                self.config, self.plan, self_hosted=compute is not None, api_key=api_key, base_url=base_url
            )
        env_choice = self.config.environment if self.config.environment is not None else environment
        fields = {} if hosted and compute is None else compute_fields(self.config)  # no instance of ours
        self._source = InstanceSource(compute, fields, env_choice, instance_resources(self.config, hosted))
        self._client: LLMClient | None = None
        self._live: LiveSession | None = None
        self._held = False  # whether self._live's lease is ours now
        self._turn: Turn | HostedTurn | None = None
        self._running = False
        self._interrupt_asked = False
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"ManagedAgent({self.config.name!r}, model={self.config.model!r}, session={self.session_id!r})"

    @property
    def store(self) -> SessionStore:
        """The sessions store (opened on first use)."""
        with self._lock:
            if self._store is None:
                self._store = open_store()
            return self._store

    # ---- turns -----------------------------------------------------------------------------

    def run(self, prompt: str) -> ManagedResult:
        """One turn (blocking): the prompt, the model and its tool uses, until the turn ends."""
        self.last_result = _portal.call(self._run_turn, prompt, ignore)
        return self.last_result

    async def arun(self, prompt: str) -> ManagedResult:
        """Async :meth:`run`; cancelling the caller interrupts the turn."""
        if _portal.on_loop_thread():
            self.last_result = await self._run_turn(prompt, ignore)
            return self.last_result
        try:
            self.last_result = await anyio.to_thread.run_sync(
                _portal.call, self._run_turn, prompt, ignore, abandon_on_cancel=True
            )
        except anyio.get_cancelled_exc_class():
            self.interrupt()
            raise
        return self.last_result

    def stream(self, prompt: str | None) -> Iterator[Event]:
        """One turn, event by event (text deltas included); leaving the loop early interrupts it.
        Its result is :attr:`last_result` afterwards."""
        return _bridge.stream(functools.partial(self._run_turn, prompt), self.interrupt, self._keep)

    def astream(self, prompt: str | None) -> AsyncIterator[Event]:
        """Async :meth:`stream`."""
        return _bridge.astream(self.stream(prompt))

    def _keep(self, result: ManagedResult) -> None:
        self.last_result = result

    def start(self, prompt: str) -> str:
        """PraisonAI's name: one turn, its final text."""
        return self.run(prompt).text

    chat = start

    async def execute(self, prompt: str) -> str:
        """One turn, its final text (what ``Agent(backend=…)`` awaits)."""
        return (await self.arun(prompt)).text

    def stream_text(self, prompt: str) -> Iterator[str]:
        """One turn's text as it streams (what ``Agent(backend=…).stream`` iterates)."""
        for event in self.stream(prompt):
            if event.type == "event_delta":
                yield event.text

    def interrupt(self) -> None:
        """Stop the running turn, from any thread (no-op when none runs): the model stream closes,
        the instance's command is killed, a partial message is kept, the session stays resumable."""
        with self._lock:
            if not self._running:
                return
            self._interrupt_asked = True
            turn = self._turn
        if turn is not None:
            _bridge.soon(turn.interrupt)

    async def _run_turn(self, prompt: str | None, emit: Callable[[Event], None]) -> ManagedResult:
        check_prompt(prompt)  # before anything is stored: a session is never broken by its input
        with self._lock:
            if self._running:
                raise SessionBusyError("a turn is already running on this ManagedAgent", op="managed")
            self._running, self._interrupt_asked = True, False
        try:
            self._check_key()  # a missing key is said before anything is provisioned
            # what the first tool call would refuse, before a billed request (hosted: nothing of
            # ours is provisioned; no instance tool: nothing ever is)
            ours = self.plan.instance and (self._hosted is None or self.compute is not None)
            if ours and (self.session_id is None or self.compute is None):
                await self._source.check()
            live = await self._hold_session()
            live.emit = emit
            turn = await self._new_turn(live)
            with self._lock:
                self._turn = turn
                if self._interrupt_asked:
                    turn.interrupt()
            heartbeat = asyncio.ensure_future(live.keep_leased())  # a long tool call outlasts a lease
            try:
                await live.attach()
                return await turn.run(prompt)
            finally:
                live.used_at = time.monotonic()
                heartbeat.cancel()
                live.emit = ignore
                self._let_go()
        finally:
            with self._lock:
                self._running, self._turn = False, None

    def _check_key(self) -> None:
        if self._hosted is not None:
            self._hosted.check_key()
        else:
            assert self._spec is not None
            api_key_for(self._spec)

    async def _new_turn(self, live: LiveSession) -> Turn | HostedTurn:
        if self._hosted is not None:
            _portal.close_at_exit(self)
            return await self._hosted.turn(
                live, self.on_tool_confirmation, self.on_custom_tool, turn_timeout_s=self.turn_timeout_s
            )
        return Turn(self._setup(), live)

    def _setup(self) -> TurnSetup:
        assert self._spec is not None
        if self._client is None:
            self._client = make_client(self._spec, turn_timeout_s=self.turn_timeout_s)
            _portal.close_at_exit(self)
        confirm, answer = self.on_tool_confirmation, self.on_custom_tool
        return TurnSetup.of(self._client, self._spec.model, self.config, self.plan, confirm, answer)

    # ---- sessions --------------------------------------------------------------------------

    async def _hold_session(self) -> LiveSession:
        """The live session under our lease: a new one, or the current one re-leased (reloaded
        from the store when another writer added to it since)."""
        store = self.store
        if self.session_id is None:
            stored = config_record(self.config)
            agent = self._agent = store.upsert_agent(self.provider, self.config.name, stored)
            metadata = {**self.config.metadata, "compute": compute_record(self.compute)}
            record, lease = store.create_session(
                agent, owner_tag(), title=self.config.session_title, metadata=metadata
            )
            self._live, self._held, self.session_id = self._new_live(record, lease), True, record.id
            return self._live
        if self._live is not None and self._held:
            return self._live
        lease = store.acquire(self.session_id, owner_tag())
        record = store.get_session(self.session_id)
        if self._live is None or self._live.last_seq != record.last_seq:
            self._live = self._new_live(record, lease)
            self._live.load()
            self._live.resumed()
        self._live.lease, self._held = lease, True
        return self._live

    def _new_live(self, record: SessionRecord, lease: Any) -> LiveSession:
        return LiveSession(self.store, record, lease, self._source)

    def _let_go(self) -> None:
        if self._live is not None and self._held:
            self._held = False
            self._live.flush()
            self._live.release()

    def resume_session(self, session_id: str, *, force: bool = False) -> None:
        """PraisonAI's name: continue the stored session ``session_id`` with this agent's config.
        Takes the session's lease (``SessionBusyError`` if a live process holds it; ``force``
        takes it anyway and fences that process off) and reattaches its instance, or replaces it."""
        _portal.call(self._take, session_id, force)

    @classmethod
    def resume(
        cls, session_id: str, *, store: SessionStore | None = None, force: bool = False, **overrides: Any
    ) -> ManagedAgent:
        """The stored session ``session_id``, in this process, with the agent config it was made
        with. ``overrides`` are constructor arguments (callbacks, ``api_key``, ``compute``), plus
        what the store does not keep: ``functions`` (the Python tools, matched by qualified name)
        and ``env`` (the values of the instance's variables, whose names alone are stored)."""
        store = store or open_store()
        record = store.get_session(session_id)
        agent = store.get_agent(record.agent_id)
        functions, env = overrides.pop("functions", ()), overrides.pop("env", None)
        kind = ManagedConfig if agent.backend == "anthropic" else LocalManagedConfig
        config = kind.from_record(agent.config, functions=functions, env=env)
        compute = overrides.pop("compute", None) or compute_from(record.metadata.get("compute"))
        overrides.setdefault("provider", agent.backend)
        managed = cls(config=config, store=store, compute=compute, **overrides)
        managed.resume_session(session_id, force=force)
        return managed

    async def _take(self, session_id: str, force: bool) -> None:
        self._let_go()
        store = self.store
        lease = store.acquire(session_id, owner_tag(), force=force)
        try:
            record = store.get_session(session_id)
            self._agent = store.get_agent(record.agent_id)
            live = self._new_live(record, lease)
            live.load()
            live.resumed()
            live.flush()
            self._live, self._held, self.session_id = live, True, session_id
            await live.attach()
            live.flush()
        except BaseException:
            store.release(lease)
            raise

    def reset_session(self) -> None:
        """PraisonAI's name: the next turn starts a new session (this one stays in the store)."""
        self._let_go()
        self._live, self.session_id = None, None

    def fork_session(
        self, session_id: str, at_turn: int | None = None, *, title: str | None = None
    ) -> ForkResult:
        """A new session: ``session_id``'s transcript to turn ``at_turn`` (``None``: the last), its
        instance from a snapshot then (``managed.fork``); continue it with :meth:`resume_session`."""
        from praisonai.managed.fork import fork_session

        return fork_session(session_id, at_turn, title=title, store=self.store, env=self.config.env)

    def retrieve_session(self) -> SessionRecord | None:
        """The current session's stored record (``None`` before the first turn)."""
        return None if self.session_id is None else self.store.get_session(self.session_id)

    # ---- closing ---------------------------------------------------------------------------

    def close(self) -> None:
        """Let go of the session's lease, close the model client (idempotent); the instance runs on."""
        _portal.call(self.aclose)

    async def aclose(self) -> None:
        self._let_go()
        client, self._client = self._client, None
        _portal.forget_at_exit(self)
        if client is not None:
            await client.aclose()
        if self._hosted is not None:
            await self._hosted.aclose()

    def __enter__(self) -> ManagedAgent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


#: PraisonAI's names (``LocalAgent(compute=…, tools_run_on=…)``, ``SandboxedAgent``) for this class.
LocalAgent = SandboxedAgent = ManagedAgent
