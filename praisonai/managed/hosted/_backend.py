"""What a hosted ManagedAgent keeps between turns, and how a turn is set up.

Before each turn: the SDK client (made once, on the portal loop), the remote agent and
environment for the config where the key and endpoint lead (:mod:`._session_target`: reused, never
made twice, made again once when the API lost them), and the session's remote twin, created the
first time with our session id in its metadata and recorded in the store before anything is sent
to it. What was made again is in the session's log (a ``remote.recreated`` event) and in its
remote details (``recreated``), so ``praisonai managed sessions show`` says it. Python callables
in ``tools`` become custom tools that run in this process; with a compute named, the environment
is ``self_hosted`` and the agent toolset runs on the session's instance (:mod:`._worker`) while
the turn runs.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any

from praisonai._errors import ConfigError
from praisonai._limits import DEFAULT_TURN_TIMEOUT_S
from praisonai.llm.tools import ToolCall, call_tool, tool_name, tool_spec
from praisonai.managed.config import ToolPlan
from praisonai.managed.config._hosted import ManagedConfig, agent_payload, environment_config
from praisonai.managed.events import Event
from praisonai.managed.hosted._client import api_key, make_client, workspace_scope
from praisonai.managed.hosted._session_target import SessionTarget
from praisonai.managed.hosted._turn import HostedSetup, HostedTurn
from praisonai.managed.live._session import LiveSession
from praisonai.managed.store import remote_cache

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

#: The agent toolset's tools, which a self-hosted worker runs.
TOOLSET_NAMES = ("bash", "read", "write", "edit", "glob", "grep")


class HostedBackend:
    """The hosted side of one ManagedAgent (see the module docstring).

    ``self_hosted``: a compute was named, so the tools run there, not in Anthropic's container.
    """

    def __init__(
        self,
        config: ManagedConfig,
        plan: ToolPlan,
        *,
        self_hosted: bool,
        api_key: str | None = None,
        base_url: str | None = None,
    ) -> None:
        self.config, self.plan, self.self_hosted = config, plan, self_hosted
        names = {tool_name(fn) for fn in plan.functions} | {tool.name for tool in plan.custom}
        clash = sorted(names & set(TOOLSET_NAMES))
        if self_hosted and clash:  # the worker would answer them as the toolset's own
            raise ConfigError(
                f"custom tools may not be named like the agent toolset's ({', '.join(clash)}) "
                "when the tools run on your compute",
                op="managed",
            )
        self._key, self._base_url = api_key, base_url
        self._client: AsyncAnthropic | None = None

    def check_key(self) -> None:
        """ConfigError naming ANTHROPIC_API_KEY when there is no key (said before any work)."""
        api_key(self._key)

    async def turn(
        self,
        live: LiveSession,
        confirm: Callable[..., Any] | None,
        on_custom_tool: Callable[..., Any] | None,
        *,
        turn_timeout_s: float | None = DEFAULT_TURN_TIMEOUT_S,
    ) -> HostedTurn:
        """The next turn of ``live``, its remote session made first when it has none;
        ``turn_timeout_s``: how long it waits with no new event from the API."""
        key = api_key(self._key)
        client = self._client = self._client or make_client(key, self._base_url)
        functions = {tool_name(fn): fn for fn in self.plan.functions}
        custom = [_custom(fn) for fn in self.plan.functions]
        target = SessionTarget(
            client,
            remote_cache(live.store),
            workspace_scope(str(client.base_url), key),
            agent_payload=agent_payload(self.config, custom),
            env_prefix=self.config.env_name,
            env_config=environment_config(self.config, self_hosted=self.self_hosted),
        )
        await target.ensure()
        if live.remote_session_id is None:
            extra = {key: value for key in ("resources", "vault_ids") if (value := getattr(self.config, key))}
            try:
                remote_id = await target.new_session(live.id, title=self.config.session_title, extra=extra)
            finally:
                _record_recreated(live, target)
            agent, environment = target.made  # after new_session: what it was made on
            live.remote_session_id = remote_id
            live.remote = {
                **live.remote,
                "agent": {"id": agent.remote_id, "version": agent.version},
                "environment_id": environment.remote_id,
            }
            live.flush(remote_session_id=live.remote_session_id, remote=live.remote)
        else:
            _record_recreated(live, target)
        # the session's own environment (the config's may have been made again since it started)
        environment_id = str(live.remote.get("environment_id") or target.made[1].remote_id)
        serve = _serving(client, environment_id, live) if self.self_hosted else None
        setup = HostedSetup(
            client,
            live.remote_session_id,
            self.config.model,
            confirm,
            _answering(functions, on_custom_tool),
            serve_tools=serve,
            turn_timeout_s=turn_timeout_s,
        )
        return HostedTurn(setup, live)

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.close()


def _record_recreated(live: LiveSession, target: SessionTarget) -> None:
    """What the API had lost and was made again, in the session's log and remote details."""
    if not target.recreated:
        return
    notes = [r.as_json() for r in target.recreated]
    live.record(*(Event("remote.recreated", note) for note in notes))
    live.remote = {**live.remote, "recreated": [*live.remote.get("recreated", ()), *notes]}
    live.flush(remote=live.remote)
    target.recreated.clear()


def _custom(fn: Callable[..., Any]) -> dict[str, Any]:
    """A Python callable as a custom tool (it runs here when the hosted agent calls it)."""
    spec = tool_spec(fn)
    return {
        "type": "custom",
        "name": spec.name,
        "description": spec.description or spec.name,
        "input_schema": dict(spec.parameters),
    }


def _answering(
    functions: Mapping[str, Callable[..., Any]], on_custom_tool: Callable[..., Any] | None
) -> Callable[..., Any] | None:
    """Custom tool calls: a callable of the config by its name, else the user's ``on_custom_tool``."""
    if not functions:
        return on_custom_tool

    async def answer(name: str, arguments: Mapping[str, Any]) -> Any:
        if name in functions:
            return await call_tool(functions, ToolCall(name, name, dict(arguments)))
        if on_custom_tool is None:
            return f"Error: no handler for custom tool {name!r}"
        result = on_custom_tool(name, arguments)
        return await result if hasattr(result, "__await__") else result

    return answer


def _serving(client: AsyncAnthropic, environment_id: str, live: LiveSession) -> Callable[..., Any]:
    """The turn's self-hosted worker: the session's instance (provisioned or reattached first)
    runs the agent toolset while the turn runs."""

    @contextlib.asynccontextmanager
    async def serve() -> AsyncIterator[None]:
        from praisonai.managed.hosted._worker import serving

        tools = await live.tools()
        assert live.remote_session_id is not None
        async with serving(
            client, environment_id=environment_id, session_id=live.remote_session_id, tools=tools
        ):
            yield

    return serve
