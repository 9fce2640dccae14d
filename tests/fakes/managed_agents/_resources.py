"""Agents and environments as the fake keeps them: versioned agents (an update with a stale
``version`` is a 409, archiving is permanent, there is no delete), environments with unique names
(a duplicate is a 409) and their config filled in as the API returns it.

Not thread-safe on its own: the server calls it under its one lock.
"""

from __future__ import annotations

import copy
from typing import Any, Final

from fakes.managed_agents._wire import ApiError, Clock, Ids, Json, Query, not_found, page, required

_TOOL_TYPES: Final = ("agent_toolset_20260401", "mcp_toolset", "custom")
_AGENT_LISTS: Final = ("tools", "mcp_servers", "skills")
_MANAGERS: Final = ("apt", "cargo", "gem", "go", "npm", "pip")


class Registry:
    """The agents (every version of each) and environments of one fake."""

    def __init__(self, ids: Ids, clock: Clock) -> None:
        self._ids, self._clock = ids, clock
        self.agents: dict[str, list[Json]] = {}  # id -> versions, oldest first
        self.environments: dict[str, Json] = {}

    # ---- agents ----------------------------------------------------------------------------------

    def create_agent(self, body: Json) -> Json:
        """``POST /v1/agents``: version 1 of a new agent."""
        required(body, "name", "model")
        now = self._clock.now()
        agent: Json = {
            "id": self._ids.new("agent"),
            "type": "agent",
            "version": 1,
            "description": None,
            "system": None,
            "metadata": {},
            "multiagent": None,
            "tools": [],
            "mcp_servers": [],
            "skills": [],
            "execution_identity": {"type": "service_account"},
            "created_at": now,
            "updated_at": now,
            "archived_at": None,
        }
        agent.update(_agent_fields(body))
        self.agents[agent["id"]] = [agent]
        return agent

    def agent(self, agent_id: str, version: int | None = None) -> Json:
        """The agent's latest version, or the given one; 404 for an unknown id or version."""
        versions = self.agents.get(agent_id)
        if versions is None:
            raise not_found("agent", agent_id)
        if version is None:
            return versions[-1]
        if not 1 <= version <= len(versions):
            raise ApiError(404, f"agent {agent_id!r} has no version {version}")
        return versions[version - 1]

    def update_agent(self, agent_id: str, body: Json) -> Json:
        """``POST /v1/agents/{id}``: a new version. Lists replace, ``metadata`` patches (a null value
        deletes the key); ``version``, when given, must be the current one (409 otherwise)."""
        current = self.agent(agent_id)
        if current["archived_at"] is not None:
            raise ApiError(400, f"agent {agent_id!r} is archived")
        expected = body.get("version")
        if expected is not None and expected != current["version"]:
            raise ApiError(409, f"agent {agent_id!r} is at version {current['version']}, not {expected}")
        fields = {k: v for k, v in body.items() if k != "version"}
        metadata = {**current["metadata"], **(fields.pop("metadata", None) or {})}
        new = {**copy.deepcopy(current), **_agent_fields(fields)}
        new.update(
            metadata={k: v for k, v in metadata.items() if v is not None},
            version=current["version"] + 1,
            updated_at=self._clock.now(),
        )
        self.agents[agent_id].append(new)
        return new

    def archive_agent(self, agent_id: str) -> Json:
        """``POST /v1/agents/{id}/archive``: permanent; new sessions may no longer use it."""
        current = self.agent(agent_id)
        if current["archived_at"] is None:
            current["archived_at"] = current["updated_at"] = self._clock.now()
        return current

    def list_agents(self, query: Query) -> Json:
        latest = [versions[-1] for versions in self.agents.values()]
        shown = [a for a in latest if query.flag("include_archived") or a["archived_at"] is None]
        return page(shown, query, 20, 100)

    def agent_versions(self, agent_id: str, query: Query) -> Json:
        self.agent(agent_id)
        return page(self.agents[agent_id], query, 20, 100)

    # ---- environments ----------------------------------------------------------------------------

    def create_environment(self, body: Json) -> Json:
        """``POST /v1/environments``: names are unique (a duplicate is a 409, as the API answers)."""
        required(body, "name")
        if any(e["name"] == body["name"] for e in self.environments.values()):
            raise ApiError(409, f"an environment named {body['name']!r} already exists")
        now = self._clock.now()
        env: Json = {
            "id": self._ids.new("env"),
            "type": "environment",
            "name": body["name"],
            "description": body.get("description"),
            "metadata": dict(body.get("metadata") or {}),
            "config": environment_config(body.get("config")),
            "scope": body.get("scope"),
            "created_at": now,
            "updated_at": now,
            "archived_at": None,
        }
        self.environments[env["id"]] = env
        return env

    def environment(self, env_id: str) -> Json:
        env = self.environments.get(env_id)
        if env is None:
            raise not_found("environment", env_id)
        return env

    def update_environment(self, env_id: str, body: Json) -> Json:
        env = self.environment(env_id)
        if env["archived_at"] is not None:
            raise ApiError(400, f"environment {env_id!r} is archived")
        for key in ("name", "description", "scope"):
            if key in body:
                env[key] = body[key]
        if "config" in body:
            env["config"] = environment_config(body["config"])
        metadata = {**env["metadata"], **(body.get("metadata") or {})}
        env.update(
            metadata={k: v for k, v in metadata.items() if v is not None}, updated_at=self._clock.now()
        )
        return env

    def list_environments(self, query: Query) -> Json:
        shown = [
            e for e in self.environments.values() if query.flag("include_archived") or not e["archived_at"]
        ]
        return page(shown, query, 20, 100)

    def delete_environment(self, env_id: str) -> Json:
        """``DELETE /v1/environments/{id}``: gone (a second delete is a 404)."""
        self.environment(env_id)
        del self.environments[env_id]
        return {"id": env_id, "type": "environment_deleted"}

    def archive_environment(self, env_id: str) -> Json:
        env = self.environment(env_id)
        if env["archived_at"] is None:
            env["archived_at"] = env["updated_at"] = self._clock.now()
        return env


def _agent_fields(body: Json) -> Json:
    """The settable fields of an agent from a create or update body, filled in as the API returns them."""
    fields: Json = {}
    for key in ("name", "description", "system", "multiagent", "execution_identity"):
        if key in body:
            fields[key] = body[key]
    if "metadata" in body:
        fields["metadata"] = dict(body["metadata"] or {})
    if "model" in body:
        model = body["model"]
        fields["model"] = {"id": model} if isinstance(model, str) else dict(model)
    for key in _AGENT_LISTS:
        if key in body:
            fields[key] = [_tool(t) if key == "tools" else dict(t) for t in body[key] or []]
    return fields


def _tool(tool: Any) -> Json:
    """A tool as the API echoes it: toolsets get their ``default_config`` and ``configs``."""
    if not isinstance(tool, dict) or tool.get("type") not in _TOOL_TYPES:
        raise ApiError(400, f"tools: unknown tool {tool!r}")
    if tool["type"] == "custom":
        required(tool, "name", "input_schema")
        return {"description": "", **tool}
    policy = "always_allow" if tool["type"] == "agent_toolset_20260401" else "always_ask"
    default = {"enabled": True, "permission_policy": {"type": policy}, **(tool.get("default_config") or {})}
    return {**tool, "default_config": default, "configs": list(tool.get("configs") or [])}


def environment_config(raw: Json | None) -> Json:
    """An environment ``config`` as the API returns it (cloud by default, unrestricted networking,
    every package manager listed); 400 for what the API refuses: an unknown networking type, or
    packages under limited networking without ``allow_package_managers``."""
    raw = raw or {"type": "cloud"}
    if raw.get("type") == "self_hosted":
        return {"type": "self_hosted"}
    if raw.get("type") != "cloud":
        raise ApiError(400, f"config.type: expected cloud or self_hosted, got {raw.get('type')!r}")
    net = raw.get("networking") or {"type": "unrestricted"}
    if net.get("type") == "limited":
        net = {
            "type": "limited",
            "allowed_hosts": list(net.get("allowed_hosts") or []),
            "allow_package_managers": bool(net.get("allow_package_managers")),
            "allow_mcp_servers": bool(net.get("allow_mcp_servers")),
        }
    elif net.get("type") != "unrestricted":
        raise ApiError(400, f"networking.type: expected unrestricted or limited, got {net.get('type')!r}")
    wanted = raw.get("packages") or {}
    packages: Json = {"type": "packages", **{m: list(wanted.get(m) or []) for m in _MANAGERS}}
    if net["type"] == "limited" and not net["allow_package_managers"] and any(packages[m] for m in _MANAGERS):
        raise ApiError(400, "networking.allow_package_managers must be true when packages are specified")
    return {"type": "cloud", "networking": net, "packages": packages}
