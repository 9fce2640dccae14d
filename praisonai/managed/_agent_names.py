"""PraisonAI's names on a ManagedAgent for its usage and its instance (``managed_session_id``,
``total_input_tokens``, ``provision_compute``, ``execute_in_compute``, ``shutdown_compute``):
kept so that code written for PraisonAI runs unchanged."""

from __future__ import annotations

import dataclasses
from typing import Any

from praisonai._errors import ConfigError
from praisonai._types import ExecResult, InstanceInfo
from praisonai.compute.config import ComputeConfig
from praisonai.llm.types import Usage
from praisonai.managed._instance import InstanceSource
from praisonai.managed._session import LiveSession


class PraisonAINames:
    """A mixin of :class:`~praisonai.managed.agent.ManagedAgent` (which provides the session)."""

    session_id: str | None
    _live: LiveSession | None
    _source: InstanceSource

    async def _hold_session(self) -> LiveSession:
        raise NotImplementedError

    def _let_go(self) -> None:
        raise NotImplementedError

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
        """The session's instance, provisioned (or reattached) now.

        ``fields`` are compute config fields for the instance this call makes, over the agent's own
        and environment.yaml, as PraisonAI's examples pass them (``idle_timeout_s=120``,
        ``image=…``, ``cpu=``, ``memory_mb=``); the session records them, so a replacement gets
        them too. They apply to a session's first instance: once it has one (even shut down since,
        to be replaced at its next use) they are refused.
        """
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

    async def execute_in_compute(self, command: str, timeout: float = 300) -> ExecResult:
        """Run ``command`` on the session's instance."""
        await self.provision_compute()
        assert self._live is not None and self._live.sandbox is not None
        return await self._live.sandbox.exec(command, timeout=timeout)

    async def shutdown_compute(self) -> None:
        """Remove the session's instance now (the session stays; its next tool use makes a new one)."""
        live = self._live
        if live is not None and live.sandbox is not None:
            await live.sandbox.shutdown()
            live.sandbox = None
