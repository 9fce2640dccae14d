"""The egress proxy that docker and kubernetes put in front of an allowlist of host names: one
tinyproxy (Debian's package, image built by ``images/build-proxy.sh``) per allowlist, which
forwards plain HTTP on port 80 and ``CONNECT`` on port 443 to the listed names only and answers
403 to anything else (``FilterDefaultDeny``). Its configuration and filter travel in the proxy's
container config (environment variables its own command writes to files before it starts as
nobody): nothing an instance can reach changes them.

The filter matches the whole request target (``FilterURLs On``), not the host alone: tinyproxy
applies ``ConnectPort`` to ``CONNECT`` only, so a host filter let plain HTTP reach a listed name on
any port. Each rule is anchored and allows no character tinyproxy would read as anything but the
name and its port (user info, another port, a path): ``http://NAME[:80]`` then ``/`` or the end,
and ``NAME:443`` for ``CONNECT``. A transparent request (origin form, Debian's tinyproxy serves
those) has its target built from its ``Host`` header, which may hide another host behind the
name (``NAME/.evil.example``); tinyproxy's upstream rules check the host it connects to: only a
listed one is reached directly, any other goes to a dead upstream.

Entries are host names only: an IP address (in any spelling a resolver takes, such as
``2130706433`` or ``0x7f.1``) is refused, since the docker bridge's gateway is this host.

What is written here is the rule, once: which entries are host names, the proxy's name (a hash of
the sorted hosts), its configuration and filter, and the instance's ``HTTP(S)_PROXY``/``NO_PROXY``.
Where the proxy runs and how the instance is kept from going around it is each provider's part."""

from __future__ import annotations

import hashlib
import ipaddress
import re

from praisonai._errors import ConfigError

PROXY_IMAGE = "praisonai-egress-proxy:latest"
PROXY_PORT = 8888
BUILD_HINT = "build it offline with `sudo images/build-proxy.sh` (Debian's tinyproxy)"
NO_PROXY = "localhost,127.0.0.1"
#: What the proxy's filter can match: a host name, or ``*.`` and a domain.
HOST = re.compile(r"(\*\.)?[a-z0-9_-]+(\.[a-z0-9_-]+)*")
#: A last label that makes a name an IPv4 address to resolvers and URL parsers (WHATWG's "ends
#: in a number"): decimal, octal (leading 0) or hexadecimal, as inet_aton reads each part.
_NUMERIC_LABEL = re.compile(r"[0-9]+|0x[0-9a-f]*")

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
FilterURLs On
FilterExtended On
FilterCaseSensitive Off
FilterDefaultDeny Yes
ConnectPort 443
{direct}Upstream http 127.0.0.1:1"""


def normalized(hosts: list[str] | tuple[str, ...]) -> list[str]:
    """``hosts`` stripped, lower-cased, without duplicates and sorted: the allowlist's one spelling."""
    return sorted({host.strip().lower() for host in hosts})


def proxy_name(hosts: list[str]) -> str:
    """The name of ``hosts``' proxy (and of what goes with it): one per allowlist, from a hash of
    the normalized hosts and of the rule they are served by (a proxy made by an older rule is
    never joined: it goes with its last instance), a valid docker and DNS-1123 name."""
    rule = proxy_environment(hosts, None)
    digest = hashlib.sha256(
        "\n".join([*hosts, rule["EGRESS_CONF"], rule["EGRESS_FILTER"]]).encode()
    ).hexdigest()[:16]
    return f"praisonai-egress-{digest}"


def is_address(entry: str) -> bool:
    """Whether an allowlist entry is an IP address in any spelling (v4, v6, bracketed, with a
    port, a zone, or IPv4 written as one integer or in hex/octal parts)."""
    text = entry.strip().lower()
    if text.startswith("[") or text.count(":") > 1:
        try:
            ipaddress.ip_address(text.strip("[]").split("]")[0].split("%")[0])
        except ValueError:
            return text.startswith("[")
        return True
    host = text.rsplit(":", 1)[0] if ":" in text else text
    return bool(_NUMERIC_LABEL.fullmatch(host.rstrip(".").rsplit(".", 1)[-1]))


def check_names(
    hosts: list[str], provider: str, takes: str, instead: str = "list the host's name"
) -> list[str]:
    """``hosts`` when every one is a name the proxy can match; else ``ConfigError``, one sentence
    naming the first entry that is not: an address (``instead`` says what to do) or something
    else (``takes`` says what ``provider`` accepts)."""
    for host in hosts:
        if is_address(host):
            raise ConfigError(
                f"network allow {host!r} is an IP address, and the {provider} provider's egress proxy "
                f"takes host names only (an address may be this machine's own); {instead} instead",
                op="provision",
            )
        if not HOST.fullmatch(host):
            raise ConfigError(f"network allow {host!r}: the {provider} provider {takes}", op="provision")
    return hosts


def host_filter(hosts: list[str]) -> str:
    """tinyproxy's filter of request targets: per host, plain HTTP to it on port 80 and CONNECT
    to it on 443, as anchored extended regexes (whole names; ``*.domain`` is one or more labels
    and the domain, never a character that could start user info, a port or a path)."""
    label = "[a-z0-9_-]+"
    rules = []
    for host in hosts:
        name = f"({label}\\.)+{_escaped(host[2:])}" if host.startswith("*.") else _escaped(host)
        rules += [f"^http://{name}(:80)?(/|$)", f"^{name}:443$"]
    return "\n".join(rules)


def _escaped(name: str) -> str:
    return name.replace(".", "\\.")  # the only regex character HOST lets through


def proxy_environment(hosts: list[str], subnet: str | None) -> dict[str, str]:
    """The proxy container's environment (read by :data:`PROXY_COMMAND`): its configuration,
    serving only ``subnet`` when given (else whoever reaches it: the provider restricts that), and
    its filter of ``hosts``."""
    allow = f"Allow {subnet}\n" if subnet else ""
    conf = _CONF.format(port=PROXY_PORT, allow=allow, direct=_direct(hosts))
    return {"EGRESS_CONF": conf, "EGRESS_FILTER": host_filter(hosts)}


def _direct(hosts: list[str]) -> str:
    """The second check, on the host tinyproxy will connect to rather than on the request's text:
    only a listed name (exactly; ``*.domain``: ending in ``.domain``) is reached directly, any
    other goes to a dead upstream on the proxy's own loopback (port 1, where nothing listens).
    A transparent request's ``Host: NAME/.evil.example:8000`` passes the filter (its target is
    built as ``http://NAME/.evil.example:8000/``) but names another host."""
    return "".join(f'Upstream none "{host[1:] if host.startswith("*.") else host}"\n' for host in hosts)


def instance_environment(address: str) -> dict[str, str]:
    """The instance's proxy variables, both cases (tools read one or the other), at ``address``."""
    url = f"http://{address}:{PROXY_PORT}"
    names = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")
    return {**dict.fromkeys(names, url), "NO_PROXY": NO_PROXY, "no_proxy": NO_PROXY}
