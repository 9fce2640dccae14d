"""What a sandbox is created with, and the tags that let any process make it again.

A paused instance has no sandbox; its resume creates one from the snapshot image with the same
settings. Modal does not give a sandbox's settings back, so the ones that matter for what runs
inside (lifetime, cpu, memory, network) are tagged on it at creation (``TAG_SPEC``, compact
JSON of what was set) beside the working dir, idle timeout and ports: any process pausing it
reads them there. The env is not tagged: tags are listed to anyone who lists sandboxes.
"""

from __future__ import annotations

import ipaddress
import json
import math
import time
from typing import Any

from praisonai.compute.config import ComputeConfig, NetworkAllow
from praisonai.compute.lifecycle import LABEL_CREATED
from praisonai.compute.providers.modal import _tunnels

MAX_LIFETIME_S = 24 * 3600  # Modal's longest sandbox timeout
#: the instance's working dir, so another process resolves relative paths the same way
TAG_WORKDIR = "praisonai.modal.workdir"
#: the idle timeout, so another process closes its idle channel in time too (see _linger)
TAG_IDLE_TIMEOUT_S = "praisonai.idle_timeout_s"
#: The same, as sandboxes made before the setting had one name everywhere spell it.
TAG_IDLE_BEFORE = "praisonai.modal.idle_timeout"
#: the settings a resume creates the sandbox with again (see the module docstring)
TAG_SPEC = "praisonai.modal.spec"


def create_kwargs(cfg: ComputeConfig, labels: dict[str, str]) -> dict[str, Any]:
    """``Sandbox.create``'s arguments for ``cfg`` but ``app``, ``name``, ``image`` and ``env``.

    An instance that pauses when idle gets no Modal ``idle_timeout``: Modal would terminate it,
    files and all, where it must be paused (snapshot first); its reaper pauses it instead."""
    spec: dict[str, Any] = {}
    if cfg.lifetime.ttl_s is not None:
        spec["ttl_s"] = cfg.lifetime.ttl_s
    if cfg.cpu is not None:
        spec["cpu"] = cfg.cpu
    if cfg.memory_mb is not None:
        spec["memory"] = cfg.memory_mb
    if cfg.network == "none":
        spec["block_network"] = True
    elif isinstance(cfg.network, NetworkAllow):
        cidrs, domains = _split_allow(cfg.network.allow)
        spec["cidrs"], spec["domains"] = cidrs, domains
    idle = None if cfg.lifetime.pauses else cfg.lifetime.idle_limit_s
    tags = {**labels, TAG_WORKDIR: cfg.working_dir, **_tunnels.tag(cfg.ports)}
    if idle:
        tags[TAG_IDLE_TIMEOUT_S] = str(idle)
    tags[TAG_SPEC] = json.dumps(spec, separators=(",", ":"))  # even empty: see ``made_before``
    kwargs = _from_spec(spec, float(labels.get(LABEL_CREATED) or time.time()))
    return {**kwargs, **_tunnels.create_kwargs(cfg.ports), "tags": tags, "idle_timeout": idle}


def from_tags(tags: dict[str, str]) -> dict[str, Any]:
    """``Sandbox.create``'s arguments again (as ``create_kwargs``), from a sandbox's tags; the
    ``timeout`` is what is left of the ttl (``past_ttl`` says when nothing is)."""
    spec = json.loads(tags.get(TAG_SPEC) or "{}")
    idle = tags.get(TAG_IDLE_TIMEOUT_S) or tags.get(TAG_IDLE_BEFORE)
    kwargs = _from_spec(spec, float(tags.get(LABEL_CREATED) or time.time()))
    ports = sorted(_tunnels.from_tags(tags))
    idle_timeout = float(idle) if idle else None
    return {**kwargs, **_tunnels.create_kwargs(ports), "tags": dict(tags), "idle_timeout": idle_timeout}


def made_before(tags: dict[str, str]) -> bool:
    """Whether the sandbox was made before its settings were tagged: a resume could not make it
    again as it was (a ``network='none'`` one would get a network), so it is not paused."""
    return TAG_SPEC not in tags


def past_ttl(tags: dict[str, str], now: float) -> str | None:
    """Why the instance is past its ttl (from its creation label), or ``None``: a pause never
    extends a lifetime."""
    ttl = json.loads(tags.get(TAG_SPEC) or "{}").get("ttl_s")
    created = tags.get(LABEL_CREATED, "")
    if not (ttl and created.isdigit()):
        return None
    age = now - int(created)
    return f"{age:.0f}s old (ttl_s={ttl:g})" if age >= ttl else None


def _from_spec(spec: dict[str, Any], created: float) -> dict[str, Any]:
    ttl = spec.get("ttl_s")
    left = MAX_LIFETIME_S if ttl is None else max(1, math.ceil(created + ttl - time.time()))
    kwargs: dict[str, Any] = {"timeout": min(left, MAX_LIFETIME_S)}
    for key in ("cpu", "memory", "block_network"):
        if key in spec:
            kwargs[key] = spec[key]
    if "cidrs" in spec:
        kwargs["outbound_cidr_allowlist"] = spec["cidrs"] or None
        kwargs["outbound_domain_allowlist"] = spec["domains"] or None
    return kwargs


def _split_allow(hosts: list[str]) -> tuple[list[str], list[str]]:
    """``network.allow`` as Modal's two lists: CIDRs/addresses, and domains (wildcards kept)."""
    cidrs, domains = [], []
    for host in hosts:
        try:
            cidrs.append(str(ipaddress.ip_network(host, strict=False)))
        except ValueError:
            domains.append(host)
    return cidrs, domains
