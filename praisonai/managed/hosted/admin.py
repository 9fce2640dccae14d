"""The hosted resources as a user manages them (``praisonai managed agents|envs|sessions``): list,
show, update, archive and delete the remote agents, environments and sessions of the API key.

Each function takes an ``AsyncAnthropic`` (made on the loop that awaits it) and returns plain
data the CLI prints: the API's objects as JSON dicts (verbatim, ``model_dump(mode="json")``), or
:class:`RemoteSession` for a session listing. Every SDK call is inside :func:`api_errors`, so a
failure reads as one sentence. Lists walk the API's page cursors lazily and stop at their bound.
Deleting what is already gone (a 404) counts as done and says so (``False``).

From sync code such as the CLI, :func:`call` runs one of them on praisonai's portal loop, with a
client made there for the call and closed after it. Each call is sent once (``max_retries=0``):
a command gets one answer, a rate limit is said at once with its ``retry-after`` instead of being
slept through, and a delete that failed is simply run again (one already done counts as done).
The SDK is imported only when a call runs.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, TypeVar

from praisonai import _portal
from praisonai._errors import ConfigError, ModelError, SessionNotFoundError
from praisonai.managed.hosted._client import api_errors, api_key, make_client

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic
    from anthropic.types.beta import BetaManagedAgentsSession
    from pydantic import BaseModel

T = TypeVar("T")

#: The most items a listing walks (the API's pages hold at most 100).
MAX_ITEMS: Final = 1000
_PAGE: Final = 100
#: The metadata key naming the local session (``msess_…``) a remote session belongs to.
SESSION_TAG: Final = "praisonai_session"
#: The agent fields ``update_agent`` may change from the command line.
AGENT_FIELDS: Final = ("name", "model", "system", "description")


@dataclass(frozen=True)
class RemoteSession:
    """A session as the API lists it; ``praisonai_session`` is the local session its metadata
    names (``None``: not one of ours, or made before the tag)."""

    id: str
    title: str | None
    status: str
    agent_id: str
    agent_name: str
    agent_version: int
    environment_id: str
    praisonai_session: str | None
    created_at: str
    updated_at: str
    archived: bool


# ---- agents ------------------------------------------------------------------------------------


async def list_agents(client: AsyncAnthropic, include_archived: bool = False) -> list[dict[str, Any]]:
    """The key's agents (their latest versions), at most :data:`MAX_ITEMS`."""
    with api_errors("listing the agents"):
        pages = client.beta.agents.list(include_archived=include_archived, limit=_PAGE)
        return [_json(a) async for a in _bounded(pages, MAX_ITEMS)]


async def show_agent(client: AsyncAnthropic, agent_id: str, version: int | None = None) -> dict[str, Any]:
    """The agent (its latest version, or ``version``). ``SessionNotFoundError`` when absent."""
    with api_errors(f"agent {agent_id}"):
        if version is None:
            return _json(await client.beta.agents.retrieve(agent_id))
        return _json(await client.beta.agents.retrieve(agent_id, version=version))


async def update_agent(client: AsyncAnthropic, agent_id: str, version: int, **fields: str) -> dict[str, Any]:
    """A new version of the agent with ``fields`` (of :data:`AGENT_FIELDS`) changed; ``version``
    is the one the change was made against (the API's precondition). A 409 means someone made
    another version since: ``ModelError`` (status 409) saying to show it and retry.

    Sent once (``max_retries=0``): the SDK retries a 409, which cannot succeed, and a retry of a
    lost answer would read as a conflict with our own change."""
    unknown = sorted(set(fields) - set(AGENT_FIELDS))
    if unknown or not fields:
        raise ConfigError(f"update an agent's {', '.join(AGENT_FIELDS)} (got {', '.join(unknown) or 'none'})")
    once = client.with_options(max_retries=0)
    try:
        with api_errors(f"updating agent {agent_id}"):
            return _json(await once.beta.agents.update(agent_id, version=version, **fields))  # type: ignore[arg-type]
    except ModelError as exc:
        if exc.status != 409:
            raise
        raise ModelError(
            f"agent {agent_id} changed since version {version}; show it "
            f"(praisonai managed agents show {agent_id}) and retry with its version",
            status=409,
            op="managed",
        ) from exc


async def archive_agent(client: AsyncAnthropic, agent_id: str) -> dict[str, Any]:
    """Archive the agent (permanent: new sessions may not use it; the API has no agent delete)."""
    with api_errors(f"archiving agent {agent_id}"):
        return _json(await client.beta.agents.archive(agent_id))


# ---- environments ------------------------------------------------------------------------------


async def list_environments(client: AsyncAnthropic, include_archived: bool = False) -> list[dict[str, Any]]:
    """The key's environments, at most :data:`MAX_ITEMS`."""
    with api_errors("listing the environments"):
        pages = client.beta.environments.list(include_archived=include_archived, limit=_PAGE)
        return [_json(e) async for e in _bounded(pages, MAX_ITEMS)]


async def show_environment(client: AsyncAnthropic, env_id: str) -> dict[str, Any]:
    with api_errors(f"environment {env_id}"):
        return _json(await client.beta.environments.retrieve(env_id))


async def delete_environment(client: AsyncAnthropic, env_id: str) -> bool:
    """Delete the environment: ``True`` when it was there, ``False`` when it was gone already."""
    return await _gone_is_done(_delete_environment(client, env_id))


async def _delete_environment(client: AsyncAnthropic, env_id: str) -> None:
    with api_errors(f"deleting environment {env_id}"):
        await client.beta.environments.delete(env_id)


# ---- sessions ----------------------------------------------------------------------------------


async def list_remote_sessions(client: AsyncAnthropic, limit: int = 20) -> list[RemoteSession]:
    """The key's sessions, newest first, at most ``limit`` (and :data:`MAX_ITEMS`)."""
    if limit < 1:
        raise ConfigError(f"limit must be at least 1, not {limit}")
    bound = min(limit, MAX_ITEMS)
    with api_errors("listing the sessions"):
        pages = client.beta.sessions.list(limit=min(bound, _PAGE))
        return [_session(s) async for s in _bounded(pages, bound)]


async def show_remote_session(client: AsyncAnthropic, session_id: str) -> dict[str, Any]:
    """The session as the API has it now: status, agent, usage, stats."""
    with api_errors(f"session {session_id}"):
        return _json(await client.beta.sessions.retrieve(session_id))


async def delete_remote_session(client: AsyncAnthropic, session_id: str, archive: bool = False) -> bool:
    """Delete the session (its events, container and checkpoints, for good), or with ``archive``
    make it read-only. ``True`` when it was there, ``False`` when it was gone already."""
    return await _gone_is_done(_delete_session(client, session_id, archive))


async def _delete_session(client: AsyncAnthropic, session_id: str, archive: bool) -> None:
    if archive:
        with api_errors(f"archiving session {session_id}"):
            await client.beta.sessions.archive(session_id)
        return
    with api_errors(f"deleting session {session_id}"):
        await client.beta.sessions.delete(session_id)


# ---- pieces ------------------------------------------------------------------------------------


async def _gone_is_done(call: Awaitable[None]) -> bool:
    """Await ``call``; a 404 (already gone) is ``False``, not an error."""
    try:
        await call
    except SessionNotFoundError:
        return False
    return True


async def _bounded(items: AsyncIterable[T], limit: int) -> AsyncIterator[T]:
    """The first ``limit`` items: the SDK fetches the next page only when it is reached."""
    count = 0
    async for item in items:
        yield item
        count += 1
        if count >= limit:
            return


def _json(model: BaseModel) -> dict[str, Any]:
    data: dict[str, Any] = model.model_dump(mode="json")
    return data


def _session(s: BetaManagedAgentsSession) -> RemoteSession:
    created, updated = s.created_at.isoformat(), s.updated_at.isoformat()
    return RemoteSession(
        id=s.id,
        title=s.title,
        status=s.status,
        agent_id=s.agent.id,
        agent_name=s.agent.name,
        agent_version=s.agent.version,
        environment_id=s.environment_id,
        praisonai_session=s.metadata.get(SESSION_TAG),
        created_at=created,
        updated_at=updated,
        archived=s.archived_at is not None,
    )


def call(fn: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> T:
    """``await fn(client, *args, **kwargs)`` on the portal loop, with a client of the key in
    ``ANTHROPIC_API_KEY`` (or ``CLAUDE_API_KEY``) and the SDK's ``ANTHROPIC_BASE_URL``.
    ``ConfigError`` when there is no key (nothing is sent)."""
    try:
        key = api_key()
    except ConfigError:
        raise ConfigError(
            "the hosted resources need an Anthropic API key: set ANTHROPIC_API_KEY (or CLAUDE_API_KEY)",
            op="managed",
        ) from None

    async def main() -> T:
        async with make_client(key) as client:
            return await fn(client.with_options(max_retries=0), *args, **kwargs)

    return _portal.call(main)
