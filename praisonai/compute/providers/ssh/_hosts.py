"""SSH host settings as users write them, and the process-wide links to each host."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from praisonai._errors import ConfigError
from praisonai.compute.providers.ssh._connect import SSHHost
from praisonai.compute.providers.ssh._link import HostLink


def check_shell(link: HostLink) -> None:
    """Once per link: the login shell runs a command (``HostLink.run`` names it when not)."""
    if not link.shell_runs:
        link.run(":")
        link.shell_runs = True


def parse_hosts(
    host: str | None, hosts: Sequence[SSHHost | Mapping[str, Any] | str] | None, settings: dict[str, Any]
) -> list[SSHHost]:
    if host is not None and hosts is not None:
        raise ConfigError("pass host= or hosts=, not both", op="config")
    if host is not None:
        return [SSHHost(host=host, **settings)]
    if hosts is None:
        return _hosts_from_env(settings)
    parsed = []
    for entry in hosts:
        if isinstance(entry, SSHHost):
            parsed.append(entry)
        elif isinstance(entry, str):
            parsed.append(SSHHost.parse(entry, **settings))
        else:
            parsed.append(SSHHost(**{**settings, **entry}))
    return parsed


def _hosts_from_env(settings: dict[str, Any]) -> list[SSHHost]:
    names = [h for h in os.environ.get("PRAISONAI_SSH_HOSTS", "").split(",") if h.strip()]
    defaults = {
        "key_file": os.environ.get("PRAISONAI_SSH_KEY") or None,
        "known_hosts": os.environ.get("PRAISONAI_SSH_KNOWN_HOSTS") or None,
        **settings,
    }
    return [SSHHost.parse(name, **{k: v for k, v in defaults.items() if v is not None}) for name in names]


_links: dict[SSHHost, HostLink] = {}
_links_lock = threading.Lock()


def link_for(host: SSHHost) -> HostLink:
    """The process-wide link to ``host``: every provider naming it shares its connections."""
    jump = link_for(host.jump) if host.jump is not None else None
    with _links_lock:
        if host not in _links:
            _links[host] = HostLink(host, jump)
        return _links[host]
