"""A remote session on the Managed Agents fake with its local record, driven by the real hosted turn
loop (``HostedTurn``) through the real ``anthropic`` client: what the hosted tests share."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from anthropic import Anthropic

from fakes.managed_agents import API_KEY, ManagedAgentsFake, Step
from praisonai.managed.events import Event
from praisonai.managed.hosted._client import make_client
from praisonai.managed.hosted._turn import HostedSetup, HostedTurn
from praisonai.managed.instance._source import InstanceSource
from praisonai.managed.live._result import ManagedResult
from praisonai.managed.live._session import LiveSession
from praisonai.managed.store import SqliteSessionStore

#: The agent's custom tool, for the turns that answer one.
CUSTOM: Any = {"type": "custom", "name": "lookup", "description": "look a word up",
          "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}}}  # fmt: skip


@dataclass
class Hosted:
    """A remote session on the fake and its local record, driven by :meth:`turn`."""

    fake: ManagedAgentsFake
    store: SqliteSessionStore
    sid: str
    live: LiveSession
    emitted: list[Event] = field(default_factory=list)

    def turn(self, prompt: str | None, *, confirm: Any = None, on_custom_tool: Any = None,
             during: Callable[[HostedTurn, Event], None] | None = None,
             **options: Any) -> ManagedResult:  # fmt: skip
        """One HostedTurn.run on a fresh client; ``during(turn, event)`` sees every streamed event;
        ``options`` are HostedSetup's (``deltas``, ``serve_tools``)."""

        async def main() -> ManagedResult:
            async with make_client(API_KEY, self.fake.url) as client:
                setup = HostedSetup(client, self.sid, "claude-sonnet-4-6", confirm, on_custom_tool, **options)
                turn = HostedTurn(setup, self.live)

                def emit(ev: Event) -> None:
                    self.emitted.append(ev)
                    if during is not None:
                        during(turn, ev)

                self.live.emit = emit
                return await turn.run(prompt)

        return asyncio.run(main())

    def resume(self) -> None:
        """The session as another process would take it over: from the store."""
        lease = self.store.acquire(self.live.id, "second-owner", force=True)
        self.live = LiveSession(self.store, self.store.get_session(self.live.id), lease, _NO_INSTANCES)

    def logged(self) -> list[Event]:
        return [stored.event for stored in self.store.events(self.live.id)]

    def remote(self) -> list[dict[str, Any]]:
        return self.fake.events(self.sid)


_NO_INSTANCES = InstanceSource(compute=None, fields={}, environment=None)
Make = Callable[[list[Step]], Hosted]


def hosted_sessions(fake: ManagedAgentsFake, tmp_path: Path) -> Iterator[Make]:
    """For a fixture: ``make(steps)`` creates a remote session scripted with ``steps`` (its agent
    has :data:`CUSTOM`) and its local record in a store of its own; the stores close after."""
    stores: list[SqliteSessionStore] = []

    def make(steps: list[Step]) -> Hosted:
        with Anthropic(base_url=fake.url, api_key=API_KEY, max_retries=0) as c:
            agent = c.beta.agents.create(name="coder", model="claude-sonnet-4-6", tools=[CUSTOM])
            env = c.beta.environments.create(name=f"env-{len(fake.environments())}")
            sid = c.beta.sessions.create(agent=agent.id, environment_id=env.id).id
        fake.script_session(sid, steps)
        store = SqliteSessionStore(tmp_path / f"store-{len(stores)}.db")
        stores.append(store)
        record, lease = store.create_session(store.upsert_agent("anthropic", "coder", {}), "test-owner")
        return Hosted(fake, store, sid, LiveSession(store, record, lease, _NO_INSTANCES))

    yield make
    for store in stores:
        store.close()
