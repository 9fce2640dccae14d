"""The remote agent, environment and session a hosted ManagedAgent runs on: made once, reused.

Agents and environments are keyed by the hash of what is sent for them and by their scope (where
they live: the API endpoint and key, as :func:`~._client.workspace_scope` fingerprints them), in
the store's ``remote_resources`` (:class:`~praisonai.managed.store.RemoteResource`):

- **Reuse.** A config whose hash is recorded in the scope reuses the recorded resource: no API
  call. Another key or endpoint is another scope: its resources are its own.
- **One per config, under concurrency.** Making one happens under a file lock named after the
  agent's name (the environment's hash), re-checked inside the lock, so concurrent runs of one
  home make one. The API itself is asked first (its list, matched by the hash we put in the
  agent's metadata, the environment's unique name), so another home's resource, or one whose
  create answer was lost, is found rather than made twice.
- **Versions.** A changed config of a named agent is an ``agents.update`` of the same remote
  agent with the version we know as precondition (a 409: someone updated it since; the current
  version is read and the update tried again). Each session pins the version it was made with.
  An agent the update does not find (404: deleted) is forgotten and made again, and said so.
- **At most once.** Creates go through :func:`~._client.at_most_once`: a lost answer is looked
  up (the list again) before anything is sent twice.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, TypeVar

from praisonai._errors import ModelError, SessionNotFoundError
from praisonai._locks import file_lock
from praisonai.managed.config import config_hash
from praisonai.managed.hosted._client import api_errors, at_most_once
from praisonai.managed.store import RemoteResource, RemoteResourceCache

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

BACKEND: Final = "anthropic"
#: The metadata keys that tie a remote resource to ours.
HASH_KEY: Final = "praisonai_config_hash"
SESSION_KEY: Final = "praisonai_session"
#: How many remote items a lookup reads at most (the API lists newest first).
LOOKUP_LIMIT: Final = 500
_T = TypeVar("_T")


@dataclass(frozen=True)
class Recreated:
    """A remote resource the API no longer had (a 404), made again: ``kind`` ``"agent"`` or
    ``"environment"``, the id that was gone and the new one."""

    kind: str
    previous_id: str
    remote_id: str

    def as_json(self) -> dict[str, str]:
        """As a session records it (its ``remote.recreated`` event, its remote details); not
        ``id``: an event's fields sit beside its own id."""
        return {
            "kind": self.kind,
            "previous_id": self.previous_id,
            "remote_id": self.remote_id,
            "reason": "the old one was not found",
        }


async def ensure_agent(
    client: AsyncAnthropic,
    store: RemoteResourceCache,
    payload: dict[str, Any],
    scope: str,
    recreated: list[Recreated] | None = None,
) -> RemoteResource:
    """The remote agent for ``payload`` (``agents.create`` fields) in ``scope``, made or updated
    only when no process made this exact config there before. An agent found gone while updating
    it is made again and added to ``recreated``."""
    digest = config_hash(payload)
    found = store.remote_resource(BACKEND, "agent", digest, scope)
    if found is not None:
        return found
    async with file_lock(f"hosted-agent-{config_hash({'name': payload['name'], 'scope': scope})[:32]}"):
        found = store.remote_resource(BACKEND, "agent", digest, scope)
        if found is None:
            remote_id, version = await _agent_for(client, store, payload, (digest, scope), recreated)
            made = RemoteResource(
                BACKEND, "agent", digest, remote_id, version, payload["name"], payload, time.time(), scope
            )
            found = store.add_remote_resource(made)
    return found


async def _agent_for(
    client: AsyncAnthropic,
    store: RemoteResourceCache,
    payload: dict[str, Any],
    key: tuple[str, str],
    recreated: list[Recreated] | None,
) -> tuple[str, int]:
    """(id, version) of the remote agent with this config: found, made, or updated to it."""
    digest, scope = key
    lookup = _agent_lookup(client, digest)
    found = await _guarded(f"looking up agent {payload['name']!r}", lookup)
    if found is not None:
        return found

    async def create(c: AsyncAnthropic) -> tuple[str, int]:
        agent = await c.beta.agents.create(**payload, metadata={HASH_KEY: digest})
        return agent.id, agent.version

    named = [r for r in store.list_remote_resources(BACKEND, "agent", scope) if r.name == payload["name"]]
    if not named:
        return await at_most_once(client, f"creating agent {payload['name']!r}", create, lookup)
    latest = max(named, key=lambda r: r.version or 0)
    try:
        return await _update_agent(client, latest, payload, digest)
    except SessionNotFoundError:  # deleted on the API: its records name nothing any more
        store.forget_remote_resource(BACKEND, "agent", latest.remote_id, scope)
    made = await at_most_once(client, f"creating agent {payload['name']!r}", create, lookup)
    if recreated is not None:
        recreated.append(Recreated("agent", latest.remote_id, made[0]))
    return made


async def _update_agent(
    client: AsyncAnthropic, latest: RemoteResource, payload: dict[str, Any], digest: str
) -> tuple[str, int]:
    """A new version of ``latest``'s remote agent with ``payload``, on top of its newest version."""
    metadata: dict[str, str | None] = {HASH_KEY: digest}
    version = latest.version or 1
    for _ in range(3):  # a 409 is a newer version made elsewhere: read it, update on top of it
        try:
            with api_errors(f"updating agent {latest.remote_id}"):
                agent = await client.beta.agents.update(
                    latest.remote_id, version=version, metadata=metadata, **payload
                )
            return agent.id, agent.version
        except ModelError as exc:
            if exc.status != 409:
                raise
            with api_errors(f"reading agent {latest.remote_id}"):
                version = (await client.beta.agents.retrieve(latest.remote_id)).version
    raise ModelError(f"agent {latest.remote_id} kept changing while being updated; try again", status=409)


def _agent_lookup(client: AsyncAnthropic, digest: str) -> Callable[[], Awaitable[tuple[str, int] | None]]:
    async def lookup() -> tuple[str, int] | None:
        async for agent in client.beta.agents.list(limit=100):
            if (agent.metadata or {}).get(HASH_KEY) == digest:
                return agent.id, agent.version
        return None

    return lookup


async def ensure_environment(
    client: AsyncAnthropic, store: RemoteResourceCache, prefix: str, config: dict[str, Any], scope: str
) -> RemoteResource:
    """The remote environment for ``config`` in ``scope``, named ``<prefix>-<hash>`` (names are
    unique on the API: a 409 means it exists, and it is reused)."""
    digest = config_hash(config)
    found = store.remote_resource(BACKEND, "environment", digest, scope)
    if found is not None:
        return found
    name = f"{prefix}-{digest[:12]}"
    async with file_lock(f"hosted-env-{config_hash({'env': digest, 'scope': scope})[:32]}"):
        found = store.remote_resource(BACKEND, "environment", digest, scope)
        if found is None:
            remote_id = await _environment_for(client, name, config)
            made = RemoteResource(
                BACKEND, "environment", digest, remote_id, None, name, config, time.time(), scope
            )
            found = store.add_remote_resource(made)
    return found


async def _environment_for(client: AsyncAnthropic, name: str, config: dict[str, Any]) -> str:
    async def lookup() -> str | None:
        async for env in client.beta.environments.list(limit=100):
            if env.name == name and env.archived_at is None:
                return env.id
        return None

    existing = await _guarded(f"looking up environment {name!r}", lookup)
    if existing is not None:
        return existing

    async def create(c: AsyncAnthropic) -> str:
        return (await c.beta.environments.create(name=name, config=config)).id  # type: ignore[arg-type]

    try:
        return await at_most_once(client, f"creating environment {name!r}", create, lookup)
    except ModelError as exc:  # 409: a duplicate name, made by someone else since the lookup
        found = await _guarded(f"looking up environment {name!r}", lookup) if exc.status == 409 else None
        if found is None:
            raise
        return found


async def create_session(
    client: AsyncAnthropic,
    *,
    session_id: str,
    agent: RemoteResource,
    environment_id: str,
    title: str | None,
    extra: dict[str, Any],
) -> str:
    """A remote session of ``agent`` pinned to its version, tagged with our ``session_id``; a
    lost answer is found by that tag instead of creating a second one."""
    since = time.time() - 300

    async def lookup() -> str | None:
        async for remote in client.beta.sessions.list(limit=100, agent_id=agent.remote_id, order="desc"):
            if (remote.metadata or {}).get(SESSION_KEY) == session_id:
                return remote.id
            if _epoch(remote.created_at) < since:
                break
        return None

    async def create(c: AsyncAnthropic) -> str:
        made = await c.beta.sessions.create(
            agent={"type": "agent", "id": agent.remote_id, "version": agent.version or 1},
            environment_id=environment_id,
            title=title,
            metadata={SESSION_KEY: session_id},
            **extra,
        )
        return made.id

    return await at_most_once(client, f"creating the session for {session_id}", create, lookup)


async def _guarded(what: str, lookup: Callable[[], Awaitable[_T]]) -> _T:
    with api_errors(what):
        return await lookup()


def _epoch(value: Any) -> float:
    return float(value.timestamp()) if hasattr(value, "timestamp") else 0.0
