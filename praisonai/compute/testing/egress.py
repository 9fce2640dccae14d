"""Conformance checks for network allowlists (``Capability.NETWORK_ALLOWLIST``): an instance
allowed one host reaches nothing else by a raw socket. The probe's target is a TEST-NET-1
address (RFC 5737) that is no listed host; a connection *refused* means a packet reached a host,
so only a timeout or an unreachable route passes."""

from __future__ import annotations

from praisonai._errors import ConfigError
from praisonai._types import Capability
from praisonai.compute.testing._kit import Context, Suite

suite = Suite()

#: The listed host: a name (RFC 2606), for providers whose proxy matches names and refuses
#: addresses; else an address, for providers that match IP blocks only.
LISTED = ("allowed.example", "192.0.2.77")
PROBE = "timeout 5 bash -c 'exec 3<>/dev/tcp/192.0.2.1/80' 2>&1; echo rc=$?"


@suite.check(Capability.NETWORK_ALLOWLIST)
async def egress_allowlist_blocks_raw_connections(ctx: Context) -> None:
    try:
        info = await ctx.provider.provision({"network": {"allow": [LISTED[0]]}})
    except ConfigError:  # names are refused: this provider takes IP blocks
        info = await ctx.provider.provision({"network": {"allow": [LISTED[1]]}})
    try:
        result = await ctx.provider.execute(info.instance_id, PROBE)
    finally:
        await ctx.provider.shutdown(info.instance_id)
    assert "rc=0" not in result.stdout, f"a raw socket to an unlisted address connected: {result.stdout!r}"
    assert "refused" not in result.stdout.lower(), f"a packet reached an unlisted host: {result.stdout!r}"
