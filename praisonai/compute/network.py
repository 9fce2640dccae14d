"""Where an instance may connect: ``ComputeConfig.network`` and PraisonAI's ``networking`` read
into it. Re-exported by ``compute.config``, where most code imports them from."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class NetworkAllow(BaseModel):
    """Reach only these hosts (``{"allow": ["pypi.org", "files.pythonhosted.org"]}``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    allow: list[str] = Field(min_length=1)


Network = Literal["unrestricted", "none"] | NetworkAllow


#: The keys of PraisonAI's networking dict (its ``NetworkingConfig``'s fields).
_NETWORKING_KEYS = ("type", "allowed_hosts", "allow_mcp_servers", "allow_package_managers")
_NETWORKING_RULE = (
    "networking must be {'type': 'unrestricted'}, {'type': 'limited', 'allowed_hosts': [hosts]} "
    "(limited with no hosts: no network) or 'none'"
)


def networking_data(networking: object) -> object:
    """PraisonAI's ``networking`` value as plain data: its ``NetworkingConfig`` (an object with a
    ``type`` enum) becomes the dict PraisonAI sends (``allowed_hosts``, ``allow_mcp_servers`` and
    ``allow_package_managers`` for ``limited`` only, as PraisonAI serialises it), an enum member
    its value; a string, a mapping or ``None`` is returned as it is."""
    if networking is None or isinstance(networking, str | Mapping):
        return getattr(networking, "value", networking)
    kind = getattr(networking, "type", None)
    if kind is None:
        return getattr(networking, "value", networking)
    data: dict[str, Any] = {"type": getattr(kind, "value", kind)}
    if data["type"] == "limited":
        for key in _NETWORKING_KEYS[1:]:
            if getattr(networking, key, None) is not None:
                data[key] = getattr(networking, key)
    return data


def network_from_praisonai(networking: object) -> Network:
    """Our ``network`` for PraisonAI's ``networking``: ``{"type": "unrestricted"}`` (or the
    string) is ``"unrestricted"``; ``"none"`` or ``{"type": "none"}`` is ``"none"``; ``{"type":
    "limited", "allowed_hosts": [...]}`` is the allowlist ``{"allow": [...]}``, and ``limited``
    with no hosts no network at all. ``networking`` may be a string, a dict, PraisonAI's
    ``NetworkingConfig`` or its ``NetworkingType``.

    ``allow_mcp_servers`` and ``allow_package_managers`` are accepted and not enforced: they are
    the hosted API's switches for its own MCP servers and package mirrors, and an instance of
    ours reaches exactly the hosts listed (list the package index there if commands install).

    Raises:
        ValueError: not one of those; one sentence.
    """
    data = networking_data(networking)
    given = dict(data) if isinstance(data, Mapping) else {"type": data}
    unknown = [str(key) for key in given if key not in _NETWORKING_KEYS]
    if unknown:
        raise ValueError(f"networking has no key {unknown[0]!r} (keys: {', '.join(_NETWORKING_KEYS)})")
    kind, hosts = getattr(given.get("type"), "value", given.get("type")), given.get("allowed_hosts")
    for key in _NETWORKING_KEYS[2:]:
        if not isinstance(given.get(key, True), bool):
            raise ValueError(f"networking {key} must be True or False, not {given[key]!r}")
    if hosts is not None and not (
        isinstance(hosts, list | tuple) and all(isinstance(h, str) and h.strip() for h in hosts)
    ):
        raise ValueError(f"networking allowed_hosts must be a list of host names, not {hosts!r}")
    if kind == "limited":
        return NetworkAllow(allow=list(hosts)) if hosts else "none"
    if kind in ("unrestricted", "none"):
        if hosts:
            raise ValueError(f"networking allowed_hosts apply to type 'limited' only, not {kind!r}")
        return "unrestricted" if kind == "unrestricted" else "none"
    raise ValueError(f"{_NETWORKING_RULE}, not {networking!r}")
