"""The egress proxy that docker and kubernetes put in front of an allowlist of host names: one
tinyproxy (Debian's package, image built by ``images/build-proxy.sh``) per allowlist, which
forwards plain HTTP and ``CONNECT`` on ports 443 and 80 to the listed names only and answers 403
to anything else (``FilterDefaultDeny``). Its configuration and filter travel in the proxy's
container config (environment variables its own command writes to files before it starts as
nobody): nothing an instance can reach changes them.

What is written here is the rule, once: which entries are host names, the proxy's name (a hash of
the sorted hosts), its configuration and filter, and the instance's ``HTTP(S)_PROXY``/``NO_PROXY``.
Where the proxy runs and how the instance is kept from going around it is each provider's part."""

from __future__ import annotations

import hashlib
import re

PROXY_IMAGE = "praisonai-egress-proxy:latest"
PROXY_PORT = 8888
BUILD_HINT = "build it offline with `sudo images/build-proxy.sh` (Debian's tinyproxy)"
NO_PROXY = "localhost,127.0.0.1"
#: What the proxy's filter can match: a host name or IPv4 address, or ``*.`` and a domain.
HOST = re.compile(r"(\*\.)?[a-z0-9_-]+(\.[a-z0-9_-]+)*")

#: The proxy container's command: its config and filter from its environment, then tinyproxy.
PROXY_COMMAND = (
    'printf "%s\\n" "$EGRESS_CONF" > /tmp/tinyproxy.conf && '
    'printf "%s\\n" "$EGRESS_FILTER" > /tmp/filter && '
    "exec tinyproxy -d -c /tmp/tinyproxy.conf"
)
_CONF = """Port {port}
Timeout 600
MaxClients 100
LogLevel Warning
DisableViaHeader Yes
{allow}Filter "/tmp/filter"
FilterURLs Off
FilterExtended On
FilterCaseSensitive Off
FilterDefaultDeny Yes
ConnectPort 443
ConnectPort 80"""


def normalized(hosts: list[str] | tuple[str, ...]) -> list[str]:
    """``hosts`` stripped, lower-cased, without duplicates and sorted: the allowlist's one spelling."""
    return sorted({host.strip().lower() for host in hosts})


def proxy_name(hosts: list[str]) -> str:
    """The name of ``hosts``' proxy (and of what goes with it): one per allowlist, from a hash of
    the normalized hosts, a valid docker and DNS-1123 name."""
    digest = hashlib.sha256("\n".join(hosts).encode()).hexdigest()[:16]
    return f"praisonai-egress-{digest}"


def host_filter(hosts: list[str]) -> str:
    """tinyproxy's filter: one anchored, dot-escaped extended regex per host (whole names only);
    ``*.domain`` is any name under ``domain``."""
    wild = "^[^/]+\\."  # one or more labels before the domain
    return "\n".join(f"{wild}{_escaped(h[2:])}$" if h.startswith("*.") else f"^{_escaped(h)}$" for h in hosts)


def _escaped(name: str) -> str:
    return name.replace(".", "\\.")  # the only regex character HOST lets through


def proxy_environment(hosts: list[str], subnet: str | None) -> dict[str, str]:
    """The proxy container's environment (read by :data:`PROXY_COMMAND`): its configuration,
    serving only ``subnet`` when given (else whoever reaches it: the provider restricts that), and
    its filter of ``hosts``."""
    allow = f"Allow {subnet}\n" if subnet else ""
    return {"EGRESS_CONF": _CONF.format(port=PROXY_PORT, allow=allow), "EGRESS_FILTER": host_filter(hosts)}


def instance_environment(address: str) -> dict[str, str]:
    """The instance's proxy variables, both cases (tools read one or the other), at ``address``."""
    url = f"http://{address}:{PROXY_PORT}"
    names = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")
    return {**dict.fromkeys(names, url), "NO_PROXY": NO_PROXY, "no_proxy": NO_PROXY}
