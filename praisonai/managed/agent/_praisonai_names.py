"""PraisonAI's names on a ManagedAgent for its usage and its instance (``managed_session_id``,
``total_input_tokens``, ``provision_compute``, ``execute_in_compute``, ``shutdown_compute``):
kept so that code written for PraisonAI runs unchanged."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from typing import Any

from praisonai import _portal
from praisonai._errors import ConfigError, UnsupportedFeatureError
from praisonai._limits import DEFAULT_EXEC_TIMEOUT_S
from praisonai._types import ExecResult, InstanceInfo
from praisonai.compute.base import ComputeProvider
from praisonai.compute.config import ComputeConfig
from praisonai.compute.registry import compute_provider
from praisonai.llm.types import Usage
from praisonai.managed.config import LocalManagedConfig, ToolPlan, config_record, resolve_tools
from praisonai.managed.instance._source import InstanceSource
from praisonai.managed.live._session import LiveSession
from praisonai.managed.store import SessionStore
from praisonai.managed.store._records import AgentRecord, SessionRecord


class PraisonAINames:
    """A mixin of :class:`~praisonai.managed.agent.ManagedAgent` (which provides the session)."""

    session_id: str | None
    provider: str
    compute: object
    config: LocalManagedConfig
    plan: ToolPlan
    _agent: AgentRecord | None
    _live: LiveSession | None
    _source: InstanceSource
    _hosted: object

    async def _hold_session(self) -> LiveSession:
        raise NotImplementedError

    def _let_go(self) -> None:
        raise NotImplementedError

    @property
    def store(self) -> SessionStore:
        raise NotImplementedError

    def resume_session(self, session_id: str, *, force: bool = False) -> None:
        raise NotImplementedError

    def retrieve_session(self) -> SessionRecord | None:
        raise NotImplementedError

    # ---- PraisonAI's ids -------------------------------------------------------------------

    @property
    def agent_id(self) -> str | None:
        """The agent this runs, once a session exists (``None`` before, as PraisonAI's is until the
        first call). The local loop: the id of this config's record in the sessions store
        (``praisonai managed agents list``). The hosted loop: the Managed Agents API's agent id."""
        remote = self._remote()
        if remote is not None:
            agent_id = _remote_field(remote, "agent", "id")
            return None if agent_id is None else str(agent_id)
        return self._agent.id if self._agent is not None else None

    @property
    def agent_version(self) -> int | None:
        """The version of :attr:`agent_id`: the store's version of this config under its name (a
        changed config under the same name is the next version); hosted, the API's version."""
        remote = self._remote()
        if remote is not None:
            version = _remote_field(remote, "agent", "version")
            return None if version is None else int(version)
        return self._agent.version if self._agent is not None else None

    @property
    def environment_id(self) -> str | None:
        """The hosted loop's environment id on the Managed Agents API. The local loop has no
        environment resource (PraisonAI's makes up an id): ``None``; its instance is
        ``retrieve_session()["sandbox"]``."""
        remote = self._remote()
        environment_id = None if remote is None else _remote_field(remote, "environment_id")
        return None if environment_id is None else str(environment_id)

    def _remote(self) -> Mapping[str, Any] | None:
        if self._hosted is None or self.session_id is None:
            return None
        record = self.retrieve_session()
        return record.remote if record is not None else None

    def list_sessions(self, limit: int = 20) -> list[SessionRecord]:
        """PraisonAI's: this agent's sessions (those of every stored version of its name, on its
        loop), newest first; ``[]`` before its first session. ``praisonai managed sessions list``
        lists the whole store."""
        store = self.store
        versions = [a.id for a in store.list_agents(self.provider) if a.name == self.config.name]
        found = [r for v in versions for r in store.list_sessions(agent_id=v, limit=limit)]
        return sorted(found, key=lambda record: (record.updated_at, record.id), reverse=True)[:limit]

    def save_ids(self) -> dict[str, Any]:
        """PraisonAI's: the ids to persist, ``{"agent_id", "agent_version", "environment_id",
        "session_id"}``; :meth:`restore_ids` continues the session from them, in any process."""
        return {
            "agent_id": self.agent_id,
            "agent_version": self.agent_version,
            "environment_id": self.environment_id,
            "session_id": self.session_id,
        }

    def restore_ids(self, ids: Mapping[str, Any]) -> None:
        """PraisonAI's: continue the session ``ids["session_id"]`` (as :meth:`resume_session`:
        its transcript and its instance, with this object's config). The agent and environment
        ids are the session's own, so they are read from it, not set; without a session id this
        is a no-op, and the next turn starts a new session."""
        session_id = ids.get("session_id")
        if session_id:
            self.resume_session(str(session_id))

    def update_agent(self, **fields: Any) -> None:
        """PraisonAI's: change this agent's config (``system=``, ``name=``, ``model=``, ``tools=``,
        any config field); the next turn uses it, in the same session, and :attr:`agent_version`
        names the stored record of the new config. Hosted: refused (the API's agent is made from
        the config; make a new ``ManagedAgent`` with the new config)."""
        if self._hosted is not None:
            raise UnsupportedFeatureError(
                "update_agent on the hosted loop: its remote agent is made from the config; "
                "make a new ManagedAgent with the changed config",
                op="managed",
            )
        config = self.config.replace(**fields)  # a wrong field: one sentence, nothing changed
        self.config, self.plan = config, resolve_tools(config)
        if self._agent is not None:
            self._agent = self.store.upsert_agent(self.provider, config.name, config_record(config))

    @property
    def compute_provider(self) -> ComputeProvider | None:
        """PraisonAI's: the provider the tools run on (``.provider_name``): the session's
        instance's, else the one ``compute`` names; ``None`` when no compute is named (the
        instance then goes to the default place, chosen at its first use)."""
        if self._live is not None and self._live.sandbox is not None:
            return self._live.sandbox.provider
        return None if self.compute is None else compute_provider(self.compute)

    @property
    def managed_session_id(self) -> str | None:
        return self.session_id

    @property
    def usage(self) -> Usage:
        """The session's cumulative usage."""
        return self._live.usage if self._live is not None else Usage()

    @property
    def total_input_tokens(self) -> int:
        return self.usage.input_tokens

    @property
    def total_output_tokens(self) -> int:
        return self.usage.output_tokens

    # ---- the instance (PraisonAI's names) --------------------------------------------------

    async def provision_compute(self, **fields: Any) -> InstanceInfo:
        """The session's instance, provisioned (or reattached) now (on praisonai's own loop, where
        the turns that use it run, whichever loop awaits this).

        ``fields`` are compute config fields for the instance this call makes, over the agent's own
        and environment.yaml, as PraisonAI's examples pass them (``idle_timeout_s=120``,
        ``image=…``, ``cpu=``, ``memory_mb=``); the session records them, so a replacement gets
        them too. They apply to a session's first instance: once it has one (even shut down since,
        to be replaced at its next use) they are refused.
        """
        return await _portal.on_portal(functools.partial(self._provision_compute, **fields))

    async def _provision_compute(self, **fields: Any) -> InstanceInfo:
        if fields:
            merged = {**self._source.fields, **fields}
            ComputeConfig.coerce(merged)  # a wrong field or value: one sentence, nothing changed
        live = await self._hold_session()
        try:
            if fields:
                if live.sandbox is not None or live.reference is not None:
                    raise ConfigError(
                        f"provision_compute({', '.join(f'{k}=...' for k in fields)}): session "
                        f"{live.id} already has an instance, and fields apply to a session's first "
                        "one; call it before the first turn, or reset_session() to start a new session",
                        op="managed",
                    )
                live.source = self._source = dataclasses.replace(self._source, fields=merged)
            tools = await live.tools()
            return tools.sandbox.info
        finally:
            self._let_go()

    async def execute_in_compute(self, command: str, timeout: float = DEFAULT_EXEC_TIMEOUT_S) -> ExecResult:
        """Run ``command`` on the session's instance (on praisonai's own loop, as provision)."""
        return await _portal.on_portal(self._execute_in_compute, command, timeout)

    async def _execute_in_compute(self, command: str, timeout: float) -> ExecResult:
        await self._provision_compute()
        assert self._live is not None and self._live.sandbox is not None
        return await self._live.sandbox.exec(command, timeout=timeout)

    async def shutdown_compute(self) -> None:
        """Remove the session's instance now (the session stays; its next tool use makes a new one)."""
        await _portal.on_portal(self._shutdown_compute)

    async def _shutdown_compute(self) -> None:
        live = self._live
        if live is not None and live.sandbox is not None:
            await live.sandbox.shutdown()
            live.sandbox = None


def _remote_field(remote: Mapping[str, Any], *path: str) -> Any:
    """``remote[path[0]][path[1]]…``, or ``None`` where the API has not said it."""
    value: Any = remote
    for key in path:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value
