"""``ManagedConfig``: a managed agent whose loop runs on Claude Managed Agents (hosted).

PraisonAI's names: ``ManagedConfig`` and ``HostedAgentConfig`` are one class. It is a
:class:`LocalManagedConfig` (so sessions, the store and the CLI treat both alike) with the hosted
agent's and environment's own fields, and PraisonAI's hosted default model::

    ManagedAgent(provider="anthropic", config=ManagedConfig(
        model="claude-sonnet-4-6", system="You are a coder.",
        packages={"pip": ["pytest"]}, networking={"type": "limited", "allowed_hosts": ["pypi.org"]}))

What becomes what on the API is :func:`agent_payload` and :func:`environment_config`; the
networking values mean what they mean locally (``"none"``, ``{"allow": [...]}``) plus the API's
own shape, and anything the API does not have (PraisonAI's ``{"type": "full"}``) is refused here,
not by a 400 later.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pydantic import Field, field_validator

from praisonai.managed.config._local import LocalManagedConfig

#: The hosted agent toolset's type (bash, read, write, edit, glob, grep, web_fetch, web_search).
AGENT_TOOLSET: Final = "agent_toolset_20260401"
_NETWORK_RULE: Final = (
    "networking must be 'unrestricted', 'none' (or 'limited'), {'allow': [hosts]}, or the API's "
    "{'type': 'limited', 'allowed_hosts': [...], 'allow_package_managers': bool, "
    "'allow_mcp_servers': bool}"
)
_LIMITED_KEYS: Final = {"type", "allowed_hosts", "allow_package_managers", "allow_mcp_servers"}


class ManagedConfig(LocalManagedConfig):
    """A hosted managed agent (see the module docstring). ``tools`` defaults to the whole agent
    toolset (permissions as the toolset's ``default_config`` says); custom tools and Python
    callables run in this process, answered through the session's events."""

    model: str = Field("claude-haiku-4-5", min_length=1)
    """The Claude model the hosted loop runs (any model string the API accepts)."""
    description: str = ""
    mcp_servers: list[dict[str, Any]] = Field(default_factory=list)
    skills: list[dict[str, Any]] = Field(default_factory=list)
    env_name: str = Field("praisonai-env", min_length=1, max_length=200)
    """The remote environment's name prefix; the config's hash completes it (names are unique)."""
    resources: list[dict[str, Any]] = Field(default_factory=list)  # type: ignore[assignment]
    """Session resources (``github_repository``, ``file``, ``memory_store``), as the API takes them."""
    vault_ids: list[str] = Field(default_factory=list)

    @field_validator("networking")
    @classmethod
    def _networking(cls, value: str | dict[str, Any] | None) -> str | dict[str, Any] | None:
        if value is not None:
            api_networking(value, packages=False, mcp=False)
        return value

    @field_validator("mcp_servers", "skills", "resources")
    @classmethod
    def _json_lists(cls, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for item in value:
            if not isinstance(item.get("type"), str):
                raise ValueError("each entry needs a 'type'")
        return value


HostedAgentConfig = ManagedConfig


def agent_payload(config: ManagedConfig, extra_tools: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``agents.create`` fields for ``config``: its tools as the API takes them (instance tool
    names and callables are not hosted tools: ``extra_tools`` are the custom tools standing for
    the callables), plus ``mcp_servers``, ``skills`` and ``description`` when set."""
    tools = [dict(entry) for entry in config.tools or () if _hosted_entry(entry)]
    if config.tools is None:
        tools = [{"type": AGENT_TOOLSET}]
    payload: dict[str, Any] = {
        "name": config.name,
        "model": config.model,
        "system": config.system,
        "tools": tools + extra_tools,
    }
    optional = {"description": config.description, "mcp_servers": config.mcp_servers, "skills": config.skills}
    payload.update({key: value for key, value in optional.items() if value})
    return payload


def environment_config(config: ManagedConfig, *, self_hosted: bool) -> dict[str, Any]:
    """The environment's ``config``: ``{"type": "self_hosted"}`` when our compute runs the tools
    (packages are then installed there, by our provisioning), else a cloud one with the config's
    networking and packages."""
    if self_hosted:
        return {"type": "self_hosted"}
    packages = {m: list(names) for m, names in (config.packages or {}).items()}
    networking = api_networking(config.networking, packages=bool(packages), mcp=bool(config.mcp_servers))
    cloud: dict[str, Any] = {"type": "cloud", "networking": networking}
    if packages:
        cloud["packages"] = {"type": "packages", **packages}
    return cloud


def api_networking(value: object, *, packages: bool, mcp: bool) -> dict[str, Any]:
    """The API's networking object for a ``networking`` value. Under limited networking, package
    managers (and MCP servers) are let through when the config has packages (servers): the API
    refuses packages otherwise.

    Raises:
        ValueError: a value the API has no networking for, or packages with package managers
            explicitly shut out.
    """
    if value is None or value == "unrestricted" or value == {"type": "unrestricted"}:
        return {"type": "unrestricted"}
    limited: dict[str, Any] = {"type": "limited", "allow_package_managers": packages}
    limited["allow_mcp_servers"] = mcp
    if value in ("none", "limited"):
        return limited
    if isinstance(value, Mapping) and set(value) == {"allow"} and _hosts(value["allow"]):
        return {**limited, "allowed_hosts": list(value["allow"])}
    if isinstance(value, Mapping) and value.get("type") == "limited" and set(value) <= _LIMITED_KEYS:
        given = {k: v for k, v in value.items() if k != "type"}
        if "allowed_hosts" in given and not _hosts(given["allowed_hosts"]):
            raise ValueError("allowed_hosts must be a list of host names")
        if packages and given.get("allow_package_managers") is False:
            raise ValueError("packages need allow_package_managers under limited networking")
        return {**limited, **given}
    raise ValueError(f"{_NETWORK_RULE}, not {value!r}")


def _hosts(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(host, str) and host for host in value)


def _hosted_entry(entry: Any) -> bool:
    """Whether a ``tools`` entry is one the API runs or relays (toolsets and custom tools)."""
    kind = str(entry.get("type", "")) if isinstance(entry, Mapping) else ""
    return kind.startswith(("agent_toolset", "mcp_toolset")) or kind == "custom"
