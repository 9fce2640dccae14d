"""The hosted resources of the Anthropic key (Claude Managed Agents), from sync code such as the
CLI: :func:`call` runs one of :mod:`praisonai.managed.hosted._admin`'s functions (re-exported
here) on praisonai's portal loop, with a client made there for the call and closed after it.

Each call is sent once (``max_retries=0``): a command gets one answer, a rate limit is said at
once with its ``retry-after`` instead of being slept through, and a delete that failed is simply
run again (one already done counts as done). Failures are the one-sentence errors of
:func:`praisonai.managed.hosted._client.api_errors`. The SDK is imported only when a call runs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from praisonai._errors import ConfigError
from praisonai.managed.hosted._admin import (
    AGENT_FIELDS,
    SESSION_TAG,
    RemoteSession,
    archive_agent,
    delete_environment,
    delete_remote_session,
    list_agents,
    list_environments,
    list_remote_sessions,
    show_agent,
    show_environment,
    show_remote_session,
    update_agent,
)

__all__ = ["AGENT_FIELDS", "SESSION_TAG", "RemoteSession", "archive_agent", "call", "delete_environment",
           "delete_remote_session", "list_agents", "list_environments", "list_remote_sessions",
           "show_agent", "show_environment", "show_remote_session", "update_agent"]  # fmt: skip

T = TypeVar("T")


def call(fn: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> T:
    """``await fn(client, *args, **kwargs)`` on the portal loop, with a client of the key in
    ``ANTHROPIC_API_KEY`` (or ``CLAUDE_API_KEY``) and the SDK's ``ANTHROPIC_BASE_URL``.
    ``ConfigError`` when there is no key (nothing is sent)."""
    from praisonai import _portal
    from praisonai.managed.hosted import _client

    try:
        key = _client.api_key()
    except ConfigError:
        raise ConfigError(
            "the hosted resources need an Anthropic API key: set ANTHROPIC_API_KEY (or CLAUDE_API_KEY)",
            op="managed",
        ) from None

    async def main() -> T:
        async with _client.make_client(key) as client:
            return await fn(client.with_options(max_retries=0), *args, **kwargs)

    return _portal.call(main)
