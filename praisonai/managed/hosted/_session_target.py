"""Where a hosted session runs: the remote agent and environment of its config in its scope (the
API endpoint and key), and its remote session made on them; what the API lost is made again, once.

The store remembers the agent and environment made for a config in a scope, and the API may have
lost them since (an agent deleted in the Console, an environment deleted with ``praisonai managed
envs delete``). The first sign is a 404 when a remote session is created on them. Then each is
read (``agents.retrieve``, ``environments.retrieve``): each one the API does not have is
forgotten and made again (looked up on the API first, as always: :mod:`._resources`), listed in
:attr:`SessionTarget.recreated` for the session to record, and the session is created once more. A
404 on that second try is not retried: one sentence says so. A 404 while neither is missing (or
one archived, not deleted) is the API's answer as it was.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from praisonai._errors import SessionNotFoundError
from praisonai.managed.hosted._client import api_errors
from praisonai.managed.hosted._resources import (
    BACKEND,
    Recreated,
    create_session,
    ensure_agent,
    ensure_environment,
)
from praisonai.managed.store import RemoteResource, RemoteResourceCache

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic


class SessionTarget:
    """The remote agent (``agents.create`` fields ``agent_payload``) and environment (named after
    ``env_prefix``, with ``env_config``) of one hosted ManagedAgent in ``scope``.

    Attributes:
        recreated: what was found gone on the API and made again since this object was made.
    """

    def __init__(
        self,
        client: AsyncAnthropic,
        store: RemoteResourceCache,
        scope: str,
        *,
        agent_payload: dict[str, Any],
        env_prefix: str,
        env_config: dict[str, Any],
    ) -> None:
        self._client, self._store, self._scope = client, store, scope
        self._payload, self._prefix, self._env_config = agent_payload, env_prefix, env_config
        self._agent: RemoteResource | None = None
        self._environment: RemoteResource | None = None
        self.recreated: list[Recreated] = []

    async def ensure(self) -> tuple[RemoteResource, RemoteResource]:
        """The agent and the environment: recorded, found on the API, or made (:mod:`._resources`)."""
        self._agent = await ensure_agent(
            self._client, self._store, self._payload, self._scope, self.recreated
        )
        self._environment = await ensure_environment(
            self._client, self._store, self._prefix, self._env_config, self._scope
        )
        return self._agent, self._environment

    @property
    def made(self) -> tuple[RemoteResource, RemoteResource]:
        """The agent and the environment as last ensured (made again, maybe, by :meth:`new_session`)."""
        assert self._agent is not None and self._environment is not None, "ensure() first"
        return self._agent, self._environment

    async def new_session(self, session_id: str, *, title: str | None, extra: dict[str, Any]) -> str:
        """The id of a new remote session for our ``session_id`` on the agent and environment (call
        :meth:`ensure` first; after it, :attr:`made` says what the session was made on)."""
        try:
            return await self._create_session(session_id, title, extra)
        except SessionNotFoundError:
            remade = await self._replace_missing()
            if not remade:
                raise
        try:
            return await self._create_session(session_id, title, extra)
        except SessionNotFoundError as exc:
            made = " and ".join(f"{r.kind} {r.remote_id}" for r in remade)
            raise SessionNotFoundError(
                f"creating the session for {session_id}: the API answered 'not found' again for the "
                f"{made} made just now to replace what it had lost; not trying again (check that "
                "base_url or ANTHROPIC_BASE_URL names one Anthropic API, then run again)"
            ) from exc

    async def _create_session(self, session_id: str, title: str | None, extra: dict[str, Any]) -> str:
        agent, environment = self.made
        return await create_session(
            self._client,
            session_id=session_id,
            agent=agent,
            environment_id=environment.remote_id,
            title=title,
            extra=extra,
        )

    async def _replace_missing(self) -> list[Recreated]:
        """Forget and make again the agent and environment the API does not have (none: empty)."""
        gone = [r for r in self.made if not await self._exists(r)]
        for resource in gone:
            self._store.forget_remote_resource(BACKEND, resource.kind, resource.remote_id, self._scope)
        if not gone:
            return []
        now = dict(zip(("agent", "environment"), await self.ensure(), strict=True))
        remade = [Recreated(r.kind, r.remote_id, now[r.kind].remote_id) for r in gone]
        self.recreated.extend(remade)
        return remade

    async def _exists(self, resource: RemoteResource) -> bool:
        """Whether the API still has ``resource`` (archived counts: it exists, and says so itself)."""
        beta = self._client.beta
        try:
            with api_errors(f"reading {resource.kind} {resource.remote_id}"):
                if resource.kind == "agent":
                    await beta.agents.retrieve(resource.remote_id)
                else:
                    await beta.environments.retrieve(resource.remote_id)
        except SessionNotFoundError:
            return False
        return True
