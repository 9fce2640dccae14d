"""The hosted backend against the real Claude Managed Agents API: runs only when
``ANTHROPIC_API_KEY`` is set (it creates an agent, an environment and a session on that account,
and removes them afterwards: the session and environment deleted, the agent archived, since the
API has no agent delete). Everything else in tests/managed/test_hosted_*.py runs against the wire
fake; this is the only test that speaks to the service.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from praisonai.managed import ManagedAgent, ManagedConfig
from praisonai.managed.hosted import admin as hosted_admin
from praisonai.managed.sessions import delete_session

pytestmark = pytest.mark.skipif(
    not os.environ.get("ANTHROPIC_API_KEY"),
    reason="live Claude Managed Agents test: set ANTHROPIC_API_KEY (it creates and then removes an "
    "agent, an environment and a session on that account)",
)


def test_a_live_hosted_turn_is_stored_and_cleaned_up(home: Path) -> None:
    config = ManagedConfig(name=f"praisonai-live-{uuid.uuid4().hex[:8]}", model="claude-haiku-4-5",
                           system="Answer in one word.", tools=[], environment=False,
                           env_name=f"praisonai-live-{uuid.uuid4().hex[:8]}")  # fmt: skip
    agent = ManagedAgent(provider="anthropic", config=config)
    try:
        result = agent.run("Reply with the word pong.")
        assert result.stop_reason == "end_turn" and "pong" in result.text.lower()
        record = agent.retrieve_session()
        assert record is not None and record.remote_session_id and record.remote
        assert any(stored.event.type == "agent.message" for stored in agent.store.events(record.id))
    finally:
        agent.close()
        if agent.session_id is not None:
            assert delete_session(agent.session_id).ok
        for resource in agent.store.list_remote_resources("anthropic"):
            if resource.kind == "environment":
                hosted_admin.call(hosted_admin.delete_environment, resource.remote_id)
            else:
                hosted_admin.call(hosted_admin.archive_agent, resource.remote_id)
